// A fuzz space centred on one serving scenario (`ppspec fuzz --around FILE`, a space file's
// `around = "FILE"`, `ppspec from-vllm --space`). The deployment the scenario states stays as it
// is: topology, speculative decoding, the model's layout, the scheduler's limits, graphs, async
// scheduling, prefix caching, module loading, the faults it switches on. What a deployment does not
// fix is drawn: the workload (requests, prompt and output lengths, arrivals, temperature and a
// greedy share, aborts, a stop token, shared prefixes), the KV cache's size (ppspec models no
// memory: the cache is sized in blocks, so that requests are preempted), max_model_len where the
// scenario leaves ppspec's own (2048), and the schedule. With chunked prefill a prompt is at most
// four chunks of the case's token budget: a small budget is where the scheduler's choices bind, and
// longer prompts there only make a case long.
#pragma once

#include <rapidcheck.h>

#include <string>
#include <vector>

#include "scenario/fuzzer/space.h"
#include "scenario/serving_case.h"
#include "serving/scenario.h"

namespace ppspec::fuzzer {

// The scenario as a case. Throws core::InputError naming the scenario's file for what a case does
// not carry: a model other than ppspec's default in its acceptance, checkpoint or expert layer (its
// vocabulary is carried); an oracle switched off; [runtime] keys other than module_loading, jitter
// and strict. Of [explore], the seed, the strategy and `free` are carried (a PCT horizon is not),
// but a case drawn around it (gen_around) draws its own seed and strategy: only `free` reaches it.
// [expect] is not carried: a case around a scenario must pass.
// `text`, the scenario file's, gives the error the line of the first key refused.
scenario::ServingCase case_of(const serving::ServingScenario& s, std::string_view text = {});

// The space around the serving scenario in `file`: ranges from one request of one token up to the
// scenario's own workload. Throws core::InputError for a file that is not a serving scenario, or
// one case_of refuses.
Space space_around(const std::string& file);

// The widest ranges a space around `centre` may ask for: prompts that fit its max_model_len (or
// its token budget, without chunked prefill), up to 256 requests of 1024 output tokens.
Space limits_around(const scenario::ServingCase& centre);

// Cases of the space's centre (space.around), drawn as the header says; every one loads.
rc::Gen<scenario::ServingCase> gen_around(const Space& space, const std::vector<std::string>& faults);

}  // namespace ppspec::fuzzer
