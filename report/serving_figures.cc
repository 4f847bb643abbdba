#include "report/serving_figures.h"

#include <algorithm>

#include "engine/fault_reach.h"

namespace ppspec::report {

namespace {

// The deployment with what its author left free ([explore] free) where a space around it can take
// it (scenario/fuzzer/around.h): the token budget down to one verification block, max_model_len up
// for long prompts. A fault reachable there is reachable on the deployment; fewer request slots
// (the other free knob, only ever lowered) enable no fault path.
engine::EngineConfig widest_free(const serving::ServingScenario& s) {
  engine::EngineConfig c = s.config;
  for (serving::FreeAxis a : s.free) {
    if (a == serving::FreeAxis::max_num_batched_tokens) c.serving.max_num_batched_tokens = c.spec.k + 1;
    if (a == serving::FreeAxis::max_model_len)
      c.model.max_model_len = std::max(c.model.max_model_len, serving::kLongestFreePrompt + c.spec.k + 2);
  }
  return c;
}

std::vector<UnreachableFault> unreachable_faults(const serving::ServingScenario& s) {
  std::vector<UnreachableFault> out;
  const engine::EngineConfig widest = widest_free(s);
  for (const engine::FaultSwitch& f : engine::kFaultSwitches) {
    if (!(s.config.faults.*f.field)) continue;
    std::string why = engine::fault_unreachable(s.config, s.runtime.module_loading, f.name);
    if (!why.empty() && engine::fault_unreachable(widest, s.runtime.module_loading, f.name).empty()) {
      why.clear();  // reachable once a free knob moves: fuzz --around draws it
    }
    if (!why.empty()) out.push_back({std::string(f.name), std::move(why)});
  }
  return out;
}

}  // namespace

ServingFigures figures_of(const serving::ServingRun& run, const serving::ServingScenario& s) {
  return ServingFigures{run.stats.numbered_steps, run.stats.warmup_steps, run.stats.steps,
                        static_cast<int64_t>(run.requests.size()), run.stats.output_tokens, run.stats.acceptance_rate(),
                        run.stats.tokens_per_step(), run.coverage, run.stats.prefix_evictions, run.paths,
                        // A run stopped at its first finding says what it reached, not what it never did.
                        run.completed ? serving::unexercised(s.config, run.paths) : std::vector<std::string>{},
                        unreachable_faults(s)};
}

}  // namespace ppspec::report
