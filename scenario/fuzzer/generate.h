// RapidCheck generators of serving cases over a Space. Every case is valid by construction (the
// loader's rules: K+1 divides every capture size and fits the budget, a prompt leaves room for a
// verification block below max_model_len, ...), and every knob shrinks toward its simplest value:
// one request, one stage, no drafts, no graphs, no aborts, greedy, the random policy.
#pragma once

#include <rapidcheck.h>

#include "scenario/serving_case.h"
#include "scenario/fuzzer/space.h"

namespace ppspec::fuzzer {

// A generated case is a serving scenario as its writer writes it (scenario/serving_case.h).
using scenario::Expectation;
using scenario::ServingCase;

rc::Gen<ServingCase> gen_serving_case(const Space& space, const std::vector<std::string>& faults);

}  // namespace ppspec::fuzzer
