#include "report/serving_figures.h"

#include "engine/fault_reach.h"

namespace ppspec::report {

namespace {

std::vector<UnreachableFault> unreachable_faults(const serving::ServingScenario& s) {
  std::vector<UnreachableFault> out;
  for (const engine::FaultSwitch& f : engine::kFaultSwitches) {
    if (!(s.config.faults.*f.field)) continue;
    std::string why = engine::fault_unreachable(s.config, s.runtime.module_loading, f.name);
    if (!why.empty()) out.push_back({std::string(f.name), std::move(why)});
  }
  return out;
}

}  // namespace

ServingFigures figures_of(const serving::ServingRun& run, const serving::ServingScenario& s) {
  return ServingFigures{
      run.stats.steps, static_cast<int64_t>(run.requests.size()), run.stats.output_tokens, run.stats.acceptance_rate(),
      run.stats.tokens_per_step(), run.coverage, run.stats.prefix_evictions, run.paths,
      // A run stopped at its first finding says what it reached, not what it never did.
      run.completed ? serving::unexercised(s.config, run.paths) : std::vector<std::string>{}, unreachable_faults(s)};
}

}  // namespace ppspec::report
