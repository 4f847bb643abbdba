#include "serving/runner.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <string>
#include <string_view>

#include "core/call_site.h"
#include "core/finding_kinds.h"
#include "core/probes.h"
#include "engine/communicators.h"
#include "sim/sim_runtime.h"
#include "verify/findings.h"
#include "verify/monitors/monitor.h"
#include "verify/monitors/serving_monitors.h"
#include "verify/oracles/serving_oracles.h"

namespace ppspec::serving {

namespace {

// Which requests each engine step ran, so that a finding about a step (a misaligned pairing, a
// deadlock, a padding row) can name the requests involved; with dp > 1, replica by replica, and
// which replicas ran a dummy batch.
class BatchLog final : public core::EventSink {
 public:
  explicit BatchLog(int dp) : dp_(dp) {}
  void on_event(const core::Event& e) override {
    // A disaggregated prefill instance numbers steps of its own: its batches are not the decode instance's.
    if (e.kind != core::EventKind::batch_scheduled || e.actor == engine::kPrefillEngineActor) return;
    const auto batch = core::BatchScheduledProbe::decode(e);
    Batch& b = batches_[e.step][std::max(0, engine::replica_of_engine_actor(e.actor, dp_))];
    b.ids.assign(batch.request_ids.begin(), batch.request_ids.end());
    b.warmup = batch.step_kind == core::StepKind::warmup;
  }
  void annotate(std::vector<core::Finding>& findings) const {
    for (core::Finding& f : findings) {
      // A finding about a host call (a module load, a blocking call) knows the step by its call site.
      for (const core::Site& s : f.sites)
        if (f.engine_step < 0) f.engine_step = core::step_of_call_site(s.origin).value_or(-1);
      // A finding about one request names it already; the step's batch is told for the others.
      if (f.engine_step < 0 || f.request >= 0) continue;
      const auto it = batches_.find(f.engine_step);
      if (it != batches_.end()) f.details.push_back(describe(f.engine_step, it->second));
    }
  }

 private:
  struct Batch {
    std::vector<int64_t> ids;
    bool warmup = false;
  };
  std::string describe(int64_t step, const std::map<int, Batch>& replicas) const {
    if (dp_ == 1) {
      const Batch& b = replicas.begin()->second;
      return b.warmup ? fmt::format("engine step {} is a warmup step over the synthetic requests {}", step,
                                    verify::token_list(b.ids))
                      : fmt::format("engine step {} is the batch of requests {}", step, verify::token_list(b.ids));
    }
    std::string out = fmt::format("engine step {}:", step);
    for (int r = 0; r < dp_; ++r) {
      const auto it = replicas.find(r);
      if (it == replicas.end() || it->second.ids.empty())
        out += fmt::format(" replica {} has nothing to run: it runs a dummy batch;", r);
      else
        out += fmt::format(" replica {} runs {}requests {};", r, it->second.warmup ? "the synthetic warmup " : "",
                           verify::token_list(it->second.ids));
    }
    out.pop_back();
    return out;
  }
  int dp_;
  std::map<int64_t, std::map<int, Batch>> batches_;
};

}  // namespace

ServingRun serve(core::Runtime& rt, const engine::EngineConfig& cfg, const std::vector<core::EventSink*>& sinks,
                 const RuntimeHooks& hooks, bool strict) {
  engine::Engine eng(cfg, rt);
  // The monitors see every event as it happens: the first failure stops the run right there where
  // the runtime can stop (the simulator: the step that went wrong is the last one simulated);
  // hazards are noted and the run goes on.
  std::vector<core::Finding> failures;
  verify::ServingMonitors monitors(verify::serving_facts(cfg, eng.checkpoint()), [&](core::Finding f) {
    if (verify::is_failure(f.verdict)) {
      if (hooks.failed) hooks.failed(f);
      failures.push_back(std::move(f));
    } else {
      hooks.note(std::move(f));
    }
  });
  BatchLog batches(cfg.topology.dp);
  rt.events().subscribe(&monitors);
  rt.events().subscribe(&batches);
  PathsSink paths;
  rt.events().subscribe(&paths);
  for (core::EventSink* s : sinks) rt.events().subscribe(s);
  eng.install();
  ServingRun out;
  out.result = rt.run();
  if (hooks.notes) out.result.notes = hooks.notes();
  verify::settle_verdict(out.result, std::move(failures), strict);
  batches.annotate(out.result.findings);
  batches.annotate(out.result.notes);
  out.stats = eng.stats();
  out.completed = eng.completed();
  out.coverage = monitors.coverage();
  for (const auto& r : eng.records())
    if (!r.dummy) out.requests.push_back(r);
  out.paths = paths_reached(paths.reached(), cfg, out.stats, out.requests);
  return out;
}

ServingRun simulate(const engine::EngineConfig& cfg, const core::WorldConfig& world, const sim::RunConfig& opts) {
  sim::SimConfig runtime = sim::sim_config(world);
  runtime.record_decisions = opts.record_decisions;
  sim::SimRuntime rt(cfg.runtime_ranks(), runtime,
                     opts.replay ? sim::make_replay_policy(*opts.replay) : sim::make_policy(opts.strategy, opts.seed),
                     opts.seed);
  rt.set_nccl_observer(opts.nccl_observer);
  const RuntimeHooks hooks{[&rt](const core::Finding&) { rt.world().halt(); },
                           [&rt](core::Finding f) { rt.world().note(std::move(f)); },
                           {}};
  return serve(rt, cfg, opts.sinks, hooks, runtime.strict);
}

core::Finding reference_failure(const std::string& name, core::FindingKind kind, core::Time at,
                                const core::RunResult& reference) {
  const auto first = std::find_if(reference.findings.begin(), reference.findings.end(),
                                  [](const core::Finding& g) { return verify::is_failure(g.verdict); });
  if (first == reference.findings.end()) {
    // Nothing failed, yet the reference did not finish its workload: nothing to compare against.
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = kind;
    f.time = at;
    f.summary = fmt::format("the reference run ({}) did not complete (verdict {}): nothing to compare against", name,
                            core::to_string(reference.verdict));
    for (const core::Finding& g : reference.findings) f.details.push_back(name + ": " + g.summary);
    return f;
  }
  // The reference failed by itself: the defect is not the one the oracle compares for (the
  // pipeline, the disaggregation, the padding), and its own finding says where it is. Its steps,
  // ranks and streams are the reference run's.
  core::Finding f = *first;
  f.summary = fmt::format("in the reference run ({}): {}", name, first->summary);
  f.details.clear();
  f.details.push_back(
      fmt::format("the run under test completed; its {} reference, the same scenario and seed, failed "
                  "first with {} / {}: the defect is there without what the oracle varies, and the "
                  "engine steps, ranks and streams named here are the reference run's",
                  name, core::to_string(first->verdict), core::to_string(first->kind)));
  f.details.insert(f.details.end(), first->details.begin(), first->details.end());
  return f;
}

namespace {

// The same scenario, changed by `vary`, as a reference for an invariance oracle; a reference that
// did not complete is a finding of its own (nothing to compare against), never a silent pass.
std::optional<core::Finding> compare_with(
    const ServingScenario& s, const sim::RunConfig& opts, const ServingRun& run, core::FindingKind kind,
    const std::string& name, const std::function<void(engine::EngineConfig&)>& vary,
    const std::function<std::optional<core::Finding>(const std::vector<engine::RequestRecord>&)>& oracle) {
  engine::EngineConfig other = s.config;
  vary(other);
  sim::RunConfig o = opts;
  o.sinks.clear();
  o.nccl_observer = nullptr;
  o.replay.reset();  // the reference is another run: its own schedule, from the strategy
  // The reference is compared by its outputs only: the run under test already looked for races.
  core::WorldConfig runtime = s.runtime;
  runtime.detect_races = false;
  const ServingRun reference = simulate(other, runtime, o);
  if (!verify::is_failure(reference.result.verdict) && reference.completed) return oracle(reference.requests);
  return reference_failure(name, kind, run.result.stats.sim_time, reference.result);
}

}  // namespace

namespace {

// [expect] acceptance: the run's acceptance rate, checked after it completed.
std::optional<core::Finding> acceptance_outside(const ServingScenario& s, const ServingRun& run) {
  if (!s.expect.acceptance) return std::nullopt;
  const auto [lo, hi] = *s.expect.acceptance;
  const double rate = run.stats.acceptance_rate();
  if (rate >= lo && rate <= hi) return std::nullopt;
  core::Finding f;
  f.verdict = core::Verdict::output_divergence;
  f.kind = core::FindingKind::acceptance;
  f.time = run.result.stats.sim_time;
  f.summary = fmt::format("acceptance {:.3f} ({} of {} verified drafts accepted), outside the expected [{}, {}]", rate,
                          run.stats.drafts_accepted, run.stats.drafts_verified, lo, hi);
  f.details.push_back(rate < lo
                          ? "the drafts were accepted less often than the drafter's design gives: worse drafts (a "
                            "drafter reading a wrong context), or drafts verified against the wrong tokens"
                          : "the drafts were accepted more often than expected: check what the verification compares");
  return f;
}

}  // namespace

ServingRun run_on_sim(const ServingScenario& s, const sim::RunConfig& opts) {
  ServingRun run = simulate(s.config, s.runtime, opts);
  if (opts.oracles) check_oracles(s, opts, run);
  return run;
}

void check_oracles(const ServingScenario& s, const sim::RunConfig& opts, ServingRun& run) {
  if (verify::is_failure(run.result.verdict) || !run.completed) return;
  std::vector<core::Finding> found;
  const engine::EngineConfig& cfg = s.config;
  if (auto f = verify::stop_string_oracle(cfg, run.requests)) found.push_back(std::move(*f));
  if (s.oracles.golden) {
    const engine::Checkpoint ckpt = engine::make_checkpoint(cfg.model);
    if (auto f = verify::golden_oracle(cfg, ckpt, run.requests, run.coverage)) found.push_back(std::move(*f));
  }
  if (auto f = verify::finish_rule_oracle(cfg, run.requests)) found.push_back(std::move(*f));
  if (s.oracles.pp_invariance && cfg.topology.pp > 1) {
    auto f = compare_with(
        s, opts, run, core::FindingKind::pp_invariance, "pp = 1",
        [](engine::EngineConfig& c) {
          // The same scheduling at one stage: with its lookahead batch, or without.
          c.serving.max_concurrent_batches = c.schedules_ahead() ? 2 : 0;
          c.topology.pp = 1;
        },
        [&](const auto& ref) { return verify::pp_invariance_oracle(cfg, run.requests, ref, run.coverage); });
    if (f) found.push_back(std::move(*f));
  }
  if (cfg.disagg.enabled) {
    auto f = compare_with(
        s, opts, run, core::FindingKind::disaggregation_invariance, "aggregated",
        [](engine::EngineConfig& c) { c.disagg = {}; },
        [&](const auto& ref) {
          return verify::invariance_oracle(
              cfg, verify::Invariance{core::FindingKind::disaggregation_invariance, "disaggregated", "aggregated"},
              run.requests, ref, run.coverage);
        });
    if (f) found.push_back(std::move(*f));
  }
  if (s.oracles.padding_invariance && !cfg.serving.capture_sizes.empty()) {
    auto f = compare_with(
        s, opts, run, core::FindingKind::padding_invariance, "eager",
        [](engine::EngineConfig& c) { c.serving.capture_sizes.clear(); },
        [&](const auto& ref) { return verify::padding_invariance_oracle(cfg, run.requests, ref, run.coverage); });
    if (f) found.push_back(std::move(*f));
  }
  if (auto f = acceptance_outside(s, run)) found.push_back(std::move(*f));
  verify::settle_verdict(run.result, std::move(found), s.runtime.strict);
}

}  // namespace ppspec::serving
