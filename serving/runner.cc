#include "serving/runner.h"

#include <fmt/format.h>

#include "sim/sim_runtime.h"
#include "verify/serving_oracles.h"

namespace ppspec::serving {

ServingRun simulate(const engine::EngineConfig& cfg, const RunOptions& opts) {
  sim::SimRuntime rt(cfg.topology.ranks(), cfg.runtime, sim::make_policy(opts.strategy, opts.seed), opts.seed);
  for (core::EventSink* s : opts.sinks) rt.events().subscribe(s);
  engine::Engine eng(cfg, rt);
  eng.install();
  ServingRun out;
  out.result = rt.run();
  out.stats = eng.stats();
  out.completed = eng.completed();
  for (const auto& r : eng.scheduler().records())
    if (!r.dummy) out.requests.push_back(r);
  return out;
}

ServingRun run_on_sim(const ServingScenario& s, const RunOptions& opts) {
  ServingRun run = simulate(s.config, opts);
  if (!opts.oracles || run.result.verdict != core::Verdict::pass || !run.completed) return run;
  std::vector<core::Finding> found;
  if (s.oracles.golden) {
    const engine::Checkpoint ckpt = engine::make_checkpoint(s.config.model);
    if (auto f = verify::golden_oracle(s.config, ckpt, run.requests)) found.push_back(std::move(*f));
  }
  if (s.oracles.pp_invariance && s.config.topology.pp > 1) {
    engine::EngineConfig flat = s.config;
    flat.topology.pp = 1;
    RunOptions o = opts;
    o.sinks.clear();
    const ServingRun reference = simulate(flat, o);
    if (reference.result.verdict != core::Verdict::pass || !reference.completed) {
      // Nothing to compare against: say why instead of passing silently.
      core::Finding f;
      f.verdict = core::Verdict::output_divergence;
      f.kind = "pp-invariance";
      f.summary = fmt::format("the pp = 1 reference run did not complete (verdict {})", core::to_string(reference.result.verdict));
      for (const core::Finding& g : reference.result.findings) f.details.push_back("pp = 1: " + g.summary);
      found.push_back(std::move(f));
    } else if (auto f = verify::pp_invariance_oracle(s.config, run.requests, reference.requests)) {
      found.push_back(std::move(*f));
    }
  }
  if (!found.empty()) {
    run.result.findings = found;
    run.result.verdict = found.front().verdict;
  }
  return run;
}

}  // namespace ppspec::serving
