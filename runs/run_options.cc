#include "runs/run_options.h"

namespace ppspec::runs {

program::SimRunOptions sim_options(const program::Program& p, const RunChoices& c) {
  program::SimRunOptions o;
  o.seed = c.seed.value_or(p.explore.seed);
  o.strategy = c.strategy.value_or(p.explore.strategy);
  o.replay = c.replay;
  if (c.sink != nullptr) o.sinks.push_back(c.sink);
  o.record_decisions = c.record_decisions;
  o.nccl_observer = c.nccl_observer;
  return o;
}

serving::RunOptions sim_options(const serving::ServingScenario& s, const RunChoices& c) {
  serving::RunOptions o;
  o.seed = c.seed.value_or(s.seed);
  o.strategy = c.strategy.value_or(s.strategy);
  o.replay = c.replay;
  if (c.sink != nullptr) o.sinks.push_back(c.sink);
  o.nccl_observer = c.nccl_observer;
  return o;  // a serving run keeps its schedule always (c.record_decisions is for programs)
}

}  // namespace ppspec::runs
