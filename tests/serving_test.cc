// The serving engine on the simulator: the feedback path carries the right drafts, warmup loads
// every kernel before serving, the trace pairs cleanly, runs are deterministic, and the oracles
// catch a wrong token or draft (and stay quiet when there is none).
#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/probes.h"
#include "engine/checkpoint.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/test_util.h"
#include "traces/jsonl_writer.h"
#include "verify/monitors/model_reference.h"
#include "verify/monitors/serving_monitors.h"
#include "verify/oracles/serving_oracles.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::testing {
namespace {

const std::string kServing = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/";

serving::ServingScenario scenario(const std::string& name) {
  return scenario::read_serving(scenario::parse_toml_file(kServing + name), kServing + name);
}

// A small pp2 tp2 K5 shape that runs in milliseconds.
serving::ServingScenario small_pp2_tp2() {
  serving::ServingScenario s = scenario("pp2_tp2_k5.toml");
  s.config.workload.num_requests = 12;
  s.config.workload.output_min = 16;
  s.config.workload.output_max = 40;
  return s;
}

// Keeps the engine probes and the events the warmup discipline needs.
class Probes final : public core::EventSink {
 public:
  struct P {
    core::EventKind kind;
    core::RankId rank;
    int64_t step, req;
    std::vector<int64_t> ints;  // kept to decode the probe from: event() views them
    std::string text;
    int64_t value;
    core::ProbeSubject subject;
    core::Event event() const {
      core::Event e;
      e.kind = kind;
      e.rank = rank;
      e.step = step;
      e.req = req;
      e.value = value;
      e.subject = subject;
      e.ints = ints;
      return e;
    }
    std::vector<int64_t> drafts() const {
      const auto d = core::DraftsProbe::decode(event()).drafts;
      return {d.begin(), d.end()};
    }
  };
  void on_event(const core::Event& e) override {
    switch (e.kind) {
      case core::EventKind::module_load:
      case core::EventKind::warmup_phase:
      case core::EventKind::inputs_built:
      case core::EventKind::tokens_sampled:
      case core::EventKind::drafts_proposed:
      case core::EventKind::drafts_adopted:
      case core::EventKind::batch_scheduled:
      case core::EventKind::feedback_adopted:
      case core::EventKind::gate:
        all.push_back(
            P{e.kind, e.rank, e.step, e.req, {e.ints.begin(), e.ints.end()}, std::string(e.text), e.value, e.subject});
        break;
      default: break;
    }
  }
  std::vector<P> all;
};

serving::ServingRun run(const serving::ServingScenario& s, uint64_t seed = 1, core::EventSink* sink = nullptr,
                        core::StrategySpec strategy = {}) {
  sim::RunConfig o;
  o.seed = seed;
  o.strategy = strategy;
  if (sink != nullptr) o.sinks.push_back(sink);
  return serving::run_on_sim(s, o);
}

// The model oracle follows every request of a pipelined run, warmup's included: nearly every row
// a rank computes is compared with the model (the rest: rows of a step whose sequence moved on),
// and every greedy sample.
TEST(Serving, TheModelReferenceChecksEveryStagesRowsAndEveryGreedySample) {
  for (const char* name : {"pp2_tp2_k5", "pp4_tp1_k3", "pp2_chunked_prefill", "pp2_temperature"}) {
    SCOPED_TRACE(name);
    const serving::ServingScenario s = scenario(fmt::format("{}.toml", name));
    const engine::Checkpoint ckpt = engine::make_checkpoint(s.config.model);
    std::vector<core::Finding> found;
    verify::ModelReference oracle(verify::serving_facts(s.config, ckpt),
                                  [&found](core::Finding f) { found.push_back(std::move(f)); });
    struct Count final : core::EventSink {
      verify::ModelReference* oracle;
      uint64_t rows = 0, samples = 0, warmup_rows = 0;
      void on_event(const core::Event& e) override {
        oracle->on_event(e);
        if (e.kind == core::EventKind::stage_output) {
          const uint64_t n = core::StageOutputProbe::decode(e).row_count();
          rows += n;
          if (e.req < -1) warmup_rows += n;
        }
        if (e.kind == core::EventKind::tokens_sampled) ++samples;
      }
    } count;
    count.oracle = &oracle;
    ASSERT_EQ(run(s, 1, &count).result.verdict, core::Verdict::pass);
    EXPECT_TRUE(found.empty()) << found.front().summary;
    EXPECT_GT(count.warmup_rows, 0u);
    EXPECT_EQ(oracle.rows_checked(), count.rows);
    if (std::string(name) != "pp2_temperature") {
      EXPECT_EQ(oracle.samples_checked() * static_cast<uint64_t>(s.config.topology.tp), count.samples);
    }
    EXPECT_GT(oracle.samples_checked(), 0u);
  }
}

TEST(Serving, EarlierStagesAdoptExactlyTheDraftsTheLastStageProposed) {
  const serving::ServingScenario s = small_pp2_tp2();
  Probes probes;
  const serving::ServingRun r = run(s, 1, &probes);
  ASSERT_EQ(r.result.verdict, core::Verdict::pass);
  // (step, request) -> drafts proposed on the last stage (both TP ranks propose the same).
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> proposed;
  for (const auto& p : probes.all)
    if (p.kind == core::EventKind::drafts_proposed && p.rank == 2) proposed[{p.step, p.req}] = p.drafts();
  ASSERT_GT(proposed.size(), 50u);
  int adopted = 0;
  for (const auto& p : probes.all) {
    if (p.kind == core::EventKind::drafts_proposed) {
      EXPECT_EQ(p.drafts(), (proposed[{p.step, p.req}])) << "TP ranks disagree";
    }
    if (p.kind != core::EventKind::drafts_adopted) continue;
    EXPECT_LT(p.rank, 2) << "only stage 0 adopts feedback";
    const auto it = proposed.find({p.step, p.req});
    ASSERT_NE(it, proposed.end()) << "rank " << p.rank << " adopted drafts for request " << p.req << " at step "
                                  << p.step << " that the last stage never proposed";
    EXPECT_EQ(p.drafts(), it->second) << "request " << p.req << " step " << p.step;
    ++adopted;
  }
  // Every proposal of a request that runs again is adopted by both stage-0 ranks.
  EXPECT_GT(adopted, 100);
  // The drafts a decode row embeds are the ones adopted for that request just before.
  std::map<std::pair<core::RankId, int64_t>, std::vector<int64_t>> latest;  // (rank, req) -> adopted drafts
  int checked = 0;
  for (const auto& p : probes.all) {
    if (p.kind == core::EventKind::drafts_adopted) latest[{p.rank, p.req}] = p.drafts();
    if (p.kind != core::EventKind::inputs_built || p.rank >= 2) continue;
    const auto row = core::InputsBuiltProbe::decode(p.event());
    if (row.input_ids.size() != 1 + 5) continue;  // a decode block: the bonus token and K = 5 drafts
    const auto it = latest.find({p.rank, p.req});
    if (it == latest.end()) continue;
    const std::vector<int64_t> embedded(row.input_ids.begin() + 1, row.input_ids.end());
    EXPECT_EQ(embedded, it->second) << "rank " << p.rank << " request " << p.req << " step " << p.step;
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

// The sampler's probe reads its counts back from device memory: a row's sampled tokens and its
// rejected drafts add up to the rows that carried logits (K + 1 for a decode, 1 for a final chunk).
TEST(Serving, EverySampledRowAccountsForEachOfItsLogitRows) {
  const serving::ServingScenario s = small_pp2_tp2();
  Probes probes;
  ASSERT_EQ(run(s, 1, &probes).result.verdict, core::Verdict::pass);
  const auto k = static_cast<int64_t>(s.config.spec.k);
  int decodes = 0;
  for (const auto& p : probes.all) {
    if (p.kind != core::EventKind::tokens_sampled) continue;
    const auto sampled = core::TokensSampledProbe::decode(p.event());
    const auto rows = static_cast<int64_t>(sampled.tokens.size()) + sampled.num_rejected;
    EXPECT_TRUE(rows == 1 || rows == k + 1)
        << "request " << p.req << " step " << p.step << ": " << sampled.tokens.size() << " sampled, "
        << sampled.num_rejected << " rejected";
    decodes += rows == k + 1 && sampled.num_rejected > 0 ? 1 : 0;
  }
  EXPECT_GT(decodes, 50) << "decodes that rejected drafts";
}

// The drafter's table as the draft kernel reads it: on a stage that loaded it, the checkpoint's with
// nothing unwritten; aliased to the target's (which lives on stage 0 only), every entry still holds
// the allocation's poison, and the report says how many.
TEST(Serving, TheDrafterTableProbeCountsTheEntriesNothingWrote) {
  serving::ServingScenario s = small_pp2_tp2();
  const serving::ServingRun clean = run(s);
  ASSERT_EQ(clean.result.verdict, core::Verdict::pass);
  s.config.faults.alias_target_embed = true;
  const serving::ServingRun aliased = run(s);
  ASSERT_EQ(aliased.result.verdict, core::Verdict::embedding_violation);
  const std::string vocab = std::to_string(s.config.model.vocab);
  EXPECT_NE(aliased.result.findings.front().summary.find(vocab + " of its " + vocab + " entries were never written"),
            std::string::npos)
      << aliased.result.findings.front().summary;
}

TEST(Serving, EveryKernelLoadsDuringWarmupAndNoneWhileServing) {
  serving::ServingScenario s = small_pp2_tp2();
  ASSERT_EQ(s.runtime.module_loading, core::ModuleLoading::lazy);
  Probes probes;
  ASSERT_EQ(run(s, 1, &probes).result.verdict, core::Verdict::pass);
  std::map<core::RankId, size_t> serving_at, loads_before;
  for (size_t i = 0; i < probes.all.size(); ++i) {
    const auto& p = probes.all[i];
    if (p.kind == core::EventKind::warmup_phase &&
        core::WarmupPhaseProbe::decode(p.event()).phase == core::WarmupPhase::serving)
      serving_at[p.rank] = i;
  }
  ASSERT_EQ(serving_at.size(), 4u);
  for (size_t i = 0; i < probes.all.size(); ++i) {
    const auto& p = probes.all[i];
    if (p.kind != core::EventKind::module_load) continue;
    EXPECT_LT(i, serving_at[p.rank]) << "rank " << p.rank << " loaded a module while serving";
    ++loads_before[p.rank];
  }
  for (core::RankId r = 0; r < 4; ++r) EXPECT_GE(loads_before[r], 5u) << "rank " << r;
}

TEST(Serving, TheRecordedTracePairsCleanly) {
  const serving::ServingScenario s = small_pp2_tp2();
  Recorder rec;
  ASSERT_EQ(run(s, 3, &rec).result.verdict, core::Verdict::pass);
  std::vector<std::string> lines{
      traces::header_json(traces::TraceHeader{.scenario = s.name, .file = s.file, .seed = 3, .strategy = "random"})};
  lines.insert(lines.end(), rec.lines.begin(), rec.lines.end());
  const core::RunResult checked = verify::check_lines(lines, "memory");
  EXPECT_EQ(checked.verdict, core::Verdict::pass) << (checked.findings.empty() ? "" : checked.findings[0].summary);
  // The three feedback messages complete on every rank of each broadcast group.
  std::map<std::pair<std::string, core::RankId>, int> completed;
  for (size_t i = 0; i < rec.kinds.size(); ++i) {
    if (rec.kinds[i] != core::EventKind::op_completed || rec.labels[i].rfind("feedback.", 0) != 0) continue;
    ++completed[{rec.labels[i].substr(0, rec.labels[i].find('@')), rec.ranks[i]}];
  }
  for (const char* m : {"feedback.sampled", "feedback.counts", "feedback.drafts"}) {
    EXPECT_GT((completed[{m, 0}]), 10) << m;
    for (core::RankId r = 1; r < 4; ++r) EXPECT_EQ((completed[{m, r}]), (completed[{m, 0}])) << m << " rank " << r;
  }
}

TEST(Serving, SameSeedSameTraceAndEverySeedSameTokens) {
  const serving::ServingScenario s = small_pp2_tp2();
  Recorder a, b;
  const serving::ServingRun ra = run(s, 5, &a);
  const serving::ServingRun rb = run(s, 5, &b);
  ASSERT_EQ(ra.result.verdict, core::Verdict::pass);
  EXPECT_EQ(a.lines, b.lines);
  for (const auto& strategy : {core::StrategySpec{}, *core::parse_strategy("pct:3")}) {
    for (uint64_t seed = 6; seed < 10; ++seed) {
      const serving::ServingRun rc = run(s, seed, nullptr, strategy);
      ASSERT_EQ(rc.result.verdict, core::Verdict::pass) << seed;
      ASSERT_EQ(rc.requests.size(), ra.requests.size());
      for (size_t i = 0; i < ra.requests.size(); ++i) EXPECT_EQ(rc.requests[i].output, ra.requests[i].output) << seed;
    }
  }
}

TEST(Serving, GraphsAndEagerGiveTheSameTokens) {
  serving::ServingScenario graphs = small_pp2_tp2();
  serving::ServingScenario eager = graphs;
  eager.config.serving.capture_sizes.clear();
  const serving::ServingRun a = run(graphs), b = run(eager);
  ASSERT_EQ(a.result.verdict, core::Verdict::pass);
  ASSERT_EQ(b.result.verdict, core::Verdict::pass);
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].output, b.requests[i].output);
    EXPECT_EQ(a.requests[i].verified_drafts, b.requests[i].verified_drafts);
  }
}

TEST(Serving, SpeculationIsUsefulAndTheWorkloadCompletes) {
  const serving::ServingRun r = run(small_pp2_tp2());
  ASSERT_EQ(r.result.verdict, core::Verdict::pass);
  EXPECT_TRUE(r.completed);
  EXPECT_GT(r.stats.acceptance_rate(), 0.25);  // alpha = 0.7 per token, K = 5
  EXPECT_LT(r.stats.acceptance_rate(), 0.8);
  for (const auto& q : r.requests) EXPECT_EQ(static_cast<int>(q.output.size()), q.spec.max_tokens) << q.spec.id;
}

TEST(Serving, StopTokensAndAbortsEndRequestsEarly) {
  const serving::ServingRun r = run(scenario("pp2_stop_and_abort.toml"));
  ASSERT_EQ(r.result.verdict, core::Verdict::pass);
  int stopped = 0, aborted = 0;
  for (const auto& q : r.requests) {
    if (q.aborted) {
      ++aborted;
      EXPECT_GE(q.output.size(), 12u);
    } else if (static_cast<int>(q.output.size()) < q.spec.max_tokens) {
      ++stopped;
      EXPECT_EQ(q.output.back(), 5);
    }
  }
  EXPECT_GT(stopped, 0);
  EXPECT_GT(aborted, 0);
}

TEST(Serving, TemperatureSamplingDepartsFromGreedyYetIsReproducible) {
  const serving::ServingScenario s = scenario("pp2_temperature.toml");
  const serving::ServingRun a = run(s, 1), b = run(s, 2);
  ASSERT_EQ(a.result.verdict, core::Verdict::pass);
  const engine::Checkpoint ckpt = engine::make_checkpoint(s.config.model);
  // The same requests with greedy sampling would match the golden continuation; these do not.
  std::vector<engine::RequestRecord> as_greedy = a.requests;
  for (auto& q : as_greedy) q.spec.spread = 0;
  EXPECT_TRUE(verify::golden_oracle(s.config, ckpt, as_greedy).has_value());
  for (size_t i = 0; i < a.requests.size(); ++i) EXPECT_EQ(a.requests[i].output, b.requests[i].output);
}

// ---- the oracles, both ways ----

TEST(Oracles, GoldenIsQuietOnACorrectRunAndNamesTheFirstWrongToken) {
  const serving::ServingScenario s = small_pp2_tp2();
  const serving::ServingRun r = run(s);
  const engine::Checkpoint ckpt = engine::make_checkpoint(s.config.model);
  EXPECT_FALSE(verify::golden_oracle(s.config, ckpt, r.requests).has_value());
  std::vector<engine::RequestRecord> bad = r.requests;
  bad[3].output[7] = (bad[3].output[7] + 1) % s.config.model.vocab;
  const auto f = verify::golden_oracle(s.config, ckpt, bad);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->verdict, core::Verdict::output_divergence);
  EXPECT_EQ(core::to_string(f->kind), "golden");
  EXPECT_NE(f->summary.find(fmt::format("request {} output token #7", bad[3].spec.id)), std::string::npos)
      << f->summary;
  EXPECT_EQ(f->engine_step, bad[3].output_step[7]);
  EXPECT_EQ(f->time, bad[3].output_time[7]);
  ASSERT_EQ(f->sites.size(), 1u);
  EXPECT_EQ(f->sites[0].rank, 2) << "the last stage's first TP rank samples";
  // Where the value first differed, from what the online monitors checked in the run.
  EXPECT_NE(f->details.back().find("the model oracle did not run"), std::string::npos) << f->details.back();
  ASSERT_GT(r.coverage.rows_checked, 0u);
  const auto located = verify::golden_oracle(s.config, ckpt, bad, r.coverage);
  ASSERT_TRUE(located.has_value());
  EXPECT_NE(located->details.back().find(
                fmt::format("token #7 of request {} was sampled by rank2 (stage 1) at engine step {}", bad[3].spec.id,
                            bad[3].output_step[7])),
            std::string::npos)
      << located->details.back();
  EXPECT_NE(located->details.back().find(
                fmt::format("the model oracle compared {} activation rows", r.coverage.rows_checked)),
            std::string::npos);
  EXPECT_NE(located->details.back().find("the engine core's record of the request"), std::string::npos);
  // With two wrong requests, the one that went wrong first is reported.
  bad[6].output[1] = (bad[6].output[1] + 1) % s.config.model.vocab;
  const auto first = verify::golden_oracle(s.config, ckpt, bad);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->engine_step, std::min(bad[3].output_step[7], bad[6].output_step[1]));
  // A truncated output is a divergence too (unless the request was aborted).
  bad = r.requests;
  bad[0].output.pop_back();
  EXPECT_TRUE(verify::golden_oracle(s.config, ckpt, bad).has_value());
  bad[0].aborted = true;
  EXPECT_FALSE(verify::golden_oracle(s.config, ckpt, bad).has_value());
}

// The finish rules need no reference: a request of any sampling that kept tokens past its stop
// token, or past max_tokens, is named at the first token it should not have returned.
TEST(Oracles, FinishRuleIsQuietOnACorrectRunAndNamesATokenKeptPastTheRules) {
  serving::ServingScenario s = scenario("pp2_temperature.toml");
  s.config.model.stop_token = 5;
  const serving::ServingRun r = run(s);
  ASSERT_EQ(r.result.verdict, core::Verdict::pass);
  EXPECT_FALSE(verify::finish_rule_oracle(s.config, r.requests).has_value());
  std::vector<engine::RequestRecord> bad = r.requests;
  const auto q = std::find_if(bad.begin(), bad.end(), [](const auto& x) { return !x.dummy && x.output.size() >= 4; });
  ASSERT_NE(q, bad.end());
  ASSERT_NE(q->spec.spread, 0u) << "a temperature-sampled request, which the golden oracle cannot check";
  q->output[1] = s.config.model.stop_token;
  auto f = verify::finish_rule_oracle(s.config, bad);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->verdict, core::Verdict::output_divergence);
  EXPECT_EQ(core::to_string(f->kind), "finish-rule");
  EXPECT_NE(f->summary.find(fmt::format("request {} returned {} token(s) after its stop token {} (output token #1)",
                                        q->spec.id, q->output.size() - 2, s.config.model.stop_token)),
            std::string::npos)
      << f->summary;
  EXPECT_EQ(f->engine_step, q->output_step[2]);
  // The stop token as the last token is the rule kept.
  q->output.resize(2);
  q->output_step.resize(2), q->output_time.resize(2);
  EXPECT_FALSE(verify::finish_rule_oracle(s.config, bad).has_value());
  // More than max_tokens.
  bad = r.requests;
  const auto g = std::find_if(bad.begin(), bad.end(), [](const auto& x) { return !x.dummy && !x.output.empty(); });
  ASSERT_NE(g, bad.end());
  g->spec.max_tokens = static_cast<int>(g->output.size()) - 1;
  std::replace(g->output.begin(), g->output.end(), s.config.model.stop_token, int64_t{0});
  f = verify::finish_rule_oracle(s.config, bad);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->summary.find("more than its max_tokens"), std::string::npos) << f->summary;
}

// From behaviour: cap_before_stop with every request sampled at temperature and the golden oracle
// off is caught by the finish rules alone; the same workload without the fault passes.
TEST(Oracles, FinishRuleCatchesCapBeforeStopOnTemperatureRequests) {
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions/cap_before_stop.toml";
  serving::ServingScenario s = scenario::read_serving(scenario::parse_toml_file(file), file);
  s.config.workload.temperature = 0.7;
  s.oracles.golden = false;
  int caught = 0;
  for (uint64_t seed = 41; seed < 49; ++seed) {
    s.config.workload.seed = seed;
    s.config.faults.cap_before_stop = true;
    const serving::ServingRun bad = run(s);
    if (bad.result.verdict != core::Verdict::pass) {
      ASSERT_EQ(core::to_string(bad.result.findings.front().kind), "finish-rule")
          << bad.result.findings.front().summary;
      ++caught;
    }
    s.config.faults.cap_before_stop = false;
    EXPECT_EQ(run(s).result.verdict, core::Verdict::pass) << "workload seed " << seed;
  }
  EXPECT_GE(caught, 2);
}

TEST(Oracles, PpInvarianceIsQuietAtPpOneAndNamesDifferentTokensOrDrafts) {
  const serving::ServingScenario s = small_pp2_tp2();
  const serving::ServingRun r = run(s);
  serving::ServingScenario flat = s;
  flat.config.topology.pp = 1;
  const serving::ServingRun ref = run(flat);
  EXPECT_FALSE(verify::pp_invariance_oracle(s.config, r.requests, ref.requests).has_value());
  std::vector<engine::RequestRecord> bad = r.requests;
  bad[2].output[4] ^= 1;
  auto f = verify::pp_invariance_oracle(s.config, bad, ref.requests);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->summary.find("at output token #4"), std::string::npos) << f->summary;
  bad = r.requests;
  ASSERT_GT(bad[5].verified_drafts.size(), 3u);
  bad[5].verified_drafts[3][0] ^= 1;
  f = verify::pp_invariance_oracle(s.config, bad, ref.requests);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->summary.find("decode step 3"), std::string::npos) << f->summary;
}

// [expect] acceptance, both ways: the scenario's range holds; a range the drafter cannot reach is
// an output divergence of kind `acceptance` that gives the figures.
TEST(Serving, AcceptanceOutsideItsExpectedRangeIsAnOutputDivergence) {
  serving::ServingScenario s = scenario("pp2_tp1_k5.toml");
  ASSERT_TRUE(s.expect.acceptance.has_value());
  EXPECT_EQ(run(s).result.verdict, core::Verdict::pass);
  s.expect.acceptance = std::make_pair(0.9, 1.0);
  const serving::ServingRun r = run(s);
  ASSERT_EQ(r.result.verdict, core::Verdict::output_divergence);
  EXPECT_EQ(core::to_string(r.result.findings.front().kind), "acceptance");
  EXPECT_NE(r.result.findings.front().summary.find("outside the expected [0.9, 1]"), std::string::npos)
      << r.result.findings.front().summary;
}

// The reference drafter is the engine's drafter: over every request of a run, at every step, the
// drafts the last stage proposed equal the plain-loop reference's over the request's context.
TEST(Serving, TheReferenceDrafterAgreesWithTheEngineOverAWholeRun) {
  for (const char* name : {"pp1_k5.toml", "pp2_tp2_k5.toml", "pp4_tp1_k3.toml"}) {
    serving::ServingScenario s = scenario(name);
    s.config.workload.num_requests = 8;
    s.expect.acceptance.reset();
    Probes probes;
    const serving::ServingRun r = run(s, 1, &probes);
    ASSERT_EQ(r.result.verdict, core::Verdict::pass) << name << ": " << r.result.findings.front().summary;
    const auto proposals = std::count_if(probes.all.begin(), probes.all.end(), [](const Probes::P& p) {
      return p.kind == core::EventKind::drafts_proposed && p.req >= 0;
    });
    EXPECT_GT(proposals, 20) << name << ": the oracle had proposals to check";
  }
}

// The edge scenarios reach their edges, seen in what the engine did (its probes), not assumed.
TEST(Serving, EdgeScenariosReachTheirEdges) {
  auto probes_of = [](const char* name) {
    Probes p;
    const serving::ServingRun r = run(scenario(name), 1, &p);
    EXPECT_EQ(r.result.verdict, core::Verdict::pass) << name;
    EXPECT_TRUE(r.completed) << name;
    return p;
  };
  {
    // Slots freed with feedback in flight: the last stage sampled a real request at a step whose
    // feedback stage 0 then did not adopt for it (its generation counter had moved on).
    const Probes p = probes_of("pp2_abort_in_flight.toml");
    std::set<std::pair<int64_t, int64_t>> adopted;
    for (const auto& e : p.all)
      if (e.kind == core::EventKind::feedback_adopted) adopted.insert({e.step, e.req});
    int skipped = 0;
    for (const auto& e : p.all)
      if (e.kind == core::EventKind::tokens_sampled && e.req >= 0 && e.rank == 1 && !adopted.count({e.step, e.req}))
        ++skipped;
    EXPECT_GT(skipped, 10) << "rows skipped by the generation counter";
  }
  {
    // The tightest max_model_len the loader accepts: rows reach its last verification block.
    const serving::ServingScenario s = scenario("pp2_length_cap.toml");
    const Probes p = probes_of("pp2_length_cap.toml");
    int64_t end = 0;
    for (const auto& e : p.all)
      if (e.kind == core::EventKind::inputs_built && e.req >= 0) {
        const auto row = core::InputsBuiltProbe::decode(e.event());
        end = std::max<int64_t>(end, row.first_position + static_cast<int64_t>(row.input_ids.size()));
      }
    EXPECT_GE(end, s.config.model.max_model_len - s.config.spec.k - 1) << "positions embedded up to " << end;
  }
  {
    // Single payload with chunked prefill: steps whose gate mixes rows that sample and rows that do not.
    const Probes p = probes_of("pp2_single_payload_chunked.toml");
    int mixed = 0;
    for (const auto& e : p.all)
      if (e.kind == core::EventKind::gate) {
        const auto gate = core::GateProbe::decode(e.event());
        if (gate.posts_feedback && std::count(gate.rows.begin(), gate.rows.end(), 0) > 0 &&
            std::count(gate.rows.begin(), gate.rows.end(), 1) > 0)
          ++mixed;
      }
    EXPECT_GT(mixed, 5) << "steps mixing prefill chunks and sampling rows";
  }
}

}  // namespace
}  // namespace ppspec::testing
