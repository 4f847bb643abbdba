// Whether a historical fault (engine/faults.h) can bite on a deployment at all: the code path the
// fault restores runs, and runs differently from the fault-free path, for SOME workload on the
// deployment. Decided from the deployment alone (topology, model, speculative decoding, serving
// limits) and the runtime's module loading, which the engine configuration does not hold. What a
// workload decides (a stop token hit, a KV cache small enough to preempt, aborts, long prompts) is
// taken as reachable: a workload may be chosen that does it. A fault that a run of a deployment
// did not catch is either unreachable there (this says why) or reachable and not exercised.
#pragma once

#include <string>
#include <string_view>

#include "core/types.h"
#include "engine/config.h"

namespace ppspec::engine {

// "" when some workload on this deployment can reach the code path the fault restores; otherwise
// why not, one short clause a report can print after "cannot be reached: " (e.g. "it needs pp >= 2:
// the drafts are relayed to earlier stages only under pipeline parallelism"). `fault` is a name of
// kFaultSwitches (asserted). The configuration's own [faults] switches are not read.
std::string fault_unreachable(const EngineConfig& c, core::ModuleLoading loading, std::string_view fault);

}  // namespace ppspec::engine
