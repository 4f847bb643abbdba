#include "runs/execute.h"

#include "program/runner.h"

namespace ppspec::runs {

sim::RunConfig run_config(const program::Program& p, const RunChoices& c) {
  sim::RunConfig o;
  o.seed = c.seed.value_or(p.explore.seed);
  o.strategy = c.strategy.value_or(p.explore.strategy);
  o.replay = c.replay;
  if (c.sink != nullptr) o.sinks.push_back(c.sink);
  o.record_decisions = c.record_decisions;
  o.nccl_observer = c.nccl_observer;
  return o;
}

sim::RunConfig run_config(const serving::ServingScenario& s, const RunChoices& c) {
  sim::RunConfig o;
  o.seed = c.seed.value_or(s.seed);
  o.strategy = c.strategy.value_or(s.strategy);
  o.replay = c.replay;
  if (c.sink != nullptr) o.sinks.push_back(c.sink);
  o.nccl_observer = c.nccl_observer;
  return o;  // a serving run keeps its schedule always (c.record_decisions is for programs)
}

core::Time gpu_hang_timeout(const program::Program& p) { return p.hang_timeout; }
core::Time gpu_hang_timeout(const serving::ServingScenario&) { return 20 * core::kSec; }

const core::RunResult& Executed::result() const {
  if (const auto* s = serving()) return s->result;
  return std::get<core::RunResult>(run);
}

core::RunResult execute(const program::Program& p, const RunChoices& c) {
  if (c.target == Target::gpus) return execute_on_gpus(p, c.gpu);
  return program::run_on_sim(p, run_config(p, c));
}

serving::ServingRun execute(const serving::ServingScenario& s, const RunChoices& c) {
  if (c.target == Target::gpus) return execute_on_gpus(s, c.gpu);
  return serving::run_on_sim(s, run_config(s, c));
}

Executed execute(const scenario::Scenario& sc, const RunChoices& c) {
  if (const auto* p = std::get_if<program::Program>(&sc)) return Executed{execute(*p, c)};
  return Executed{execute(std::get<serving::ServingScenario>(sc), c)};
}

}  // namespace ppspec::runs
