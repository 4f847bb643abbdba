// Prefill/decode disaggregation (engine/disaggregation.h): the routes of the KV transfer cover
// every consumer rank's caches exactly once, whatever the two instances' shapes; the schedulers'
// parts (export and hold on the prefill side; allocate, pass over while pulling, admit from the
// prompt's last token on the decode side); the scenario table and what it refuses; and serving
// runs whose decode outputs equal the aggregated engine's, request by request.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "engine/disaggregation.h"
#include "engine/scheduler.h"
#include "engine/communicators.h"
#include "tests/probe_events.h"
#include "verify/monitors/kv_transfer.h"
#include "verify/monitors/serving_monitors.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

engine::EngineConfig disaggregated(int pp, int tp, int prefill_pp, int prefill_tp, int k = 3) {
  engine::EngineConfig c;
  c.topology.pp = pp;
  c.topology.tp = tp;
  c.disagg.enabled = true;
  c.disagg.prefill.pp = prefill_pp;
  c.disagg.prefill.tp = prefill_tp;
  c.spec.k = k;
  c.model.layers = 4;
  c.model.lanes = 8;
  c.model.block_size = 4;
  c.serving.max_num_seqs = 4;
  c.serving.max_num_batched_tokens = 64;
  c.workload.prompt_max = 20;
  c.workload.output_max = 16;
  return c;
}

TEST(Disaggregation, ThePrefillInstanceFollowsTheDecodeInstancesRanks) {
  const engine::EngineConfig d = disaggregated(2, 2, 3, 1);
  EXPECT_EQ(d.instance(), engine::Instance::decode);
  EXPECT_EQ(d.runtime_ranks(), 4 + 3);
  const engine::EngineConfig p = engine::prefill_instance_config(d);
  EXPECT_EQ(p.instance(), engine::Instance::prefill);
  EXPECT_EQ(p.topology.first_rank, 4);
  EXPECT_EQ(p.topology.rank_of(2, 0), 6);
  EXPECT_EQ(p.topology.stage_of(6), 2);
  EXPECT_EQ(p.runtime_ranks(), 3);
  const engine::EngineConfig back = engine::decode_instance_config(p);
  EXPECT_EQ(back.instance(), engine::Instance::decode);
  EXPECT_EQ(back.topology.pp, 2);
  EXPECT_EQ(back.topology.tp, 2);
}

// Every consumer rank receives each (layer it holds, lane it holds) from exactly one producer that
// holds it, the context lane on the first stage and the drafter's KV on the last exactly once.
TEST(Disaggregation, RoutesCoverEveryConsumerCacheExactlyOnce) {
  for (int pp : {1, 2, 4})
    for (int tp : {1, 2, 4})
      for (int ppp : {1, 2, 4})
        for (int ptp : {1, 2, 4}) {
          SCOPED_TRACE(::testing::Message()
                       << "decode pp " << pp << " tp " << tp << ", prefill pp " << ppp << " tp " << ptp);
          const engine::EngineConfig d = disaggregated(pp, tp, ppp, ptp);
          const engine::EngineConfig p = engine::prefill_instance_config(d);
          std::map<std::tuple<int, int, int>, int> layer_lanes;  // (consumer, layer, lane) -> times
          std::map<std::pair<int, engine::KvPart>, int> unsharded;
          for (const engine::KvRoute& r : engine::kv_routes(d)) {
            EXPECT_TRUE(d.topology.holds(r.consumer) && p.topology.holds(r.producer));
            const engine::LayerRange pl = engine::stage_layers(d.model, ppp, p.topology.stage_of(r.producer));
            const int p_lanes = 8 / ptp, p_first = p.topology.tp_rank_of(r.producer) * p_lanes;
            for (const engine::KvSegment& s : r.segments) {
              if (s.part != engine::KvPart::layer) {
                ++unsharded[{r.consumer, s.part}];
                continue;
              }
              EXPECT_EQ(s.src_layer, s.dst_layer);
              EXPECT_TRUE(s.src_layer >= pl.first && s.src_layer < pl.last);
              for (int l = s.lane_begin; l < s.lane_begin + s.lane_count; ++l) {
                EXPECT_TRUE(l >= p_first && l < p_first + p_lanes);
                ++layer_lanes[{r.consumer, s.dst_layer, l}];
              }
            }
          }
          for (int c = 0; c < d.topology.ranks(); ++c) {
            const int stage = d.topology.stage_of(c);
            const engine::LayerRange dl = engine::stage_layers(d.model, pp, stage);
            const int lanes = 8 / tp, first = d.topology.tp_rank_of(c) * lanes;
            for (int l = 0; l < 4; ++l)
              for (int lane = 0; lane < 8; ++lane) {
                const bool held = l >= dl.first && l < dl.last && lane >= first && lane < first + lanes;
                EXPECT_EQ((layer_lanes[{c, l, lane}]), held ? 1 : 0)
                    << "rank " << c << " layer " << l << " lane " << lane;
              }
            EXPECT_EQ((unsharded[{c, engine::KvPart::context}]), stage == 0 ? 1 : 0) << c;
            EXPECT_EQ((unsharded[{c, engine::KvPart::draft}]), stage == pp - 1 ? 1 : 0) << c;
          }
        }
}

TEST(Disaggregation, ThePrefillSideExportsItsPromptBlocksAndHoldsThemUntilSent) {
  const engine::EngineConfig p = engine::prefill_instance_config(disaggregated(1, 1, 1, 1));
  engine::RequestSpec r;
  r.id = 0;
  r.prompt.assign(8, 3);  // two blocks of 4; the K = 3 lookahead slots take a third
  r.max_tokens = 1;
  engine::Scheduler s(p, {r});
  s.admit_until(0);
  const auto so = s.schedule(0);
  ASSERT_EQ(so->requests.size(), 1u);
  EXPECT_EQ(so->requests[0].new_blocks.size(), 3u);
  engine::ModelOutput out;
  out.step = 0;
  engine::RowOutput row;
  row.idx = so->requests[0].idx;
  row.id = 0;
  row.num_sampled = 1;
  row.tokens = {5};
  out.rows.push_back(row);
  s.update(*so, out);
  const std::vector<engine::KvExport> e = s.take_exports();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].blocks,
            (std::vector<int32_t>(so->requests[0].new_blocks.begin(), so->requests[0].new_blocks.begin() + 2)));
  EXPECT_FALSE(s.done());  // the blocks are held for the transfer
  const int free_before = s.pool().free_count();
  s.release_export(0, 1);
  EXPECT_EQ(s.pool().free_count(), free_before + 3);
  EXPECT_TRUE(s.done());
}

TEST(Disaggregation, TheDecodeSidePullsThenAdmitsFromThePromptsLastToken) {
  const engine::EngineConfig d = disaggregated(1, 1, 1, 1);
  engine::RequestSpec a, b;
  a.id = 0;
  a.prompt.assign(8, 3);
  a.max_tokens = 4;
  b = a;
  b.id = 1;
  engine::Scheduler s(d, {a, b});
  s.admit_until(1'000'000);  // nothing: requests arrive from the prefill instance
  EXPECT_EQ(s.schedule(0), nullptr);
  s.arrive_remote({0, {7, 9}});
  s.arrive_remote({1, {11, 12}});
  EXPECT_EQ(s.schedule(0), nullptr);  // blocks allocated, pulls started, nothing to run
  const std::vector<engine::KvLoad> loads = s.take_loads();
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].local.size(), 2u);  // the prompt's blocks, no lookahead
  EXPECT_EQ(loads[0].remote, (std::vector<int32_t>{7, 9}));
  s.kv_loaded(1, 0);  // the second request's pulls complete first: it is admitted past the first
  const auto so = s.schedule(1);
  ASSERT_NE(so, nullptr);
  ASSERT_EQ(so->requests.size(), 1u);
  EXPECT_EQ(so->requests[0].id, 1);
  EXPECT_EQ(so->requests[0].num_computed, 7);
  EXPECT_EQ(so->requests[0].num_tokens, 1);
  EXPECT_EQ(so->requests[0].first_new_block, 0);
  // The pulled blocks first, then the lookahead slots' block.
  EXPECT_EQ(std::vector<int32_t>(so->requests[0].new_blocks.begin(), so->requests[0].new_blocks.begin() + 2),
            loads[1].local);
  ASSERT_EQ(so->new_requests.size(), 1u);
  EXPECT_EQ(so->new_requests[0].num_computed, 7);
}

// An abort that reaches a request whose KV is still being pulled ends it at once, and its blocks
// are held until its pulls complete (vLLM #32255); under abort_frees_loading_blocks they are freed
// at the abort, under the pulls still writing them.
TEST(Disaggregation, AnAbortWhileTheKvLoadsHoldsTheBlocksUntilThePullsComplete) {
  for (bool fault : {false, true}) {
    SCOPED_TRACE(fault ? "abort_frees_loading_blocks" : "fixed");
    engine::EngineConfig d = disaggregated(1, 1, 1, 1);
    d.workload.abort_every = 1;
    d.workload.abort_while_loading = true;
    d.faults.abort_frees_loading_blocks = fault;
    engine::RequestSpec a;
    a.id = 0;
    a.prompt.assign(8, 3);
    a.max_tokens = 4;
    a.abort = true;
    engine::Scheduler s(d, {a});
    s.admit_until(1'000'000);  // nothing: the request arrives from the prefill instance
    s.arrive_remote({0, {7, 9}});
    EXPECT_EQ(s.schedule(0), nullptr);  // blocks allocated, the pulls posted
    ASSERT_EQ(s.take_loads().size(), 1u);
    const int free_loading = s.pool().free_count();
    (void)s.take_ledger();
    EXPECT_EQ(s.schedule(1), nullptr);  // the abort arrives: the request ends
    std::vector<engine::LedgerEntry> at_abort = s.take_ledger();
    ASSERT_GE(at_abort.size(), 2u);
    EXPECT_EQ(at_abort[0].what, engine::LedgerEntry::What::abort_arrived);
    EXPECT_EQ(at_abort[1].what, engine::LedgerEntry::What::released);
    EXPECT_EQ(at_abort[1].state_index, -1);
    EXPECT_EQ(at_abort[1].blocks.size(), fault ? 0u : 2u);  // fenced until the pulls complete
    EXPECT_EQ(s.pool().free_count(), free_loading + (fault ? 2 : 0));
    EXPECT_EQ(s.done(), fault);  // held blocks keep the scheduler from being done
    s.kv_loaded(0, 2);
    EXPECT_EQ(s.pool().free_count(), free_loading + 2);
    EXPECT_TRUE(s.done());
    const std::vector<engine::LedgerEntry> at_load = s.take_ledger();
    EXPECT_EQ(at_load.size(), fault ? 0u : 1u);  // the blocks' free, once the pulls completed
  }
}

const char* kScenario = R"(kind = "serving"
name = "pd"

[topology]
pp = 1
tp = 2

[disaggregation]
prefill_pp = 2
prefill_tp = 1

[spec]
k = 3

[serving]
capture_sizes = [4, 8]
max_num_seqs = 4
max_num_batched_tokens = 32

[workload]
num_requests = 6
prompt_min = 4
prompt_max = 16
output_min = 4
output_max = 12
seed = 3
)";

TEST(Disaggregation, TheScenarioTableReadsAndIsChecked) {
  const serving::ServingScenario s = scenario::parse_serving(kScenario, "pd.toml");
  EXPECT_TRUE(s.config.disagg.enabled);
  EXPECT_EQ(s.config.disagg.prefill.pp, 2);
  EXPECT_EQ(s.config.disagg.prefill.tp, 1);
  const auto bad = [](std::string name, const std::string& from, const std::string& to, int line, std::string msg) {
    expect_rejected(Bad{std::move(name), replaced(kScenario, from, to), line, std::move(msg)}, scenario::parse_serving);
  };
  bad("prefill_pp_over_layers", "prefill_pp = 2", "prefill_pp = 8", 9, "prefill_pp = 8 has more stages than");
  bad("prefill_tp_not_dividing", "prefill_tp = 1", "prefill_tp = 3", 10, "prefill_tp = 3 does not divide");
  bad("unknown_key", "prefill_tp = 1", "prefill_dp = 1", 10, "unknown key 'prefill_dp'");
  bad("dp", "tp = 2\n", "tp = 2\ndp = 2\n", 7, "a decode instance of several data-parallel replicas");
  bad("prefix_caching", "max_num_seqs = 4", "max_num_seqs = 4\nenable_prefix_caching = true", 18,
      "prefix caching with disaggregation");
  bad("recurrent", "[spec]", "[model]\nrecurrent_layers = [1]\n\n[spec]", 13, "recurrent layers with disaggregation");
  bad("abort_while_loading_without_aborts", "seed = 3", "seed = 3\nabort_while_loading = true", 27,
      "need aborted requests: set abort_every");
  expect_rejected(Bad{"abort_while_loading_without_disaggregation",
                      replaced(replaced(kScenario, "[disaggregation]\nprefill_pp = 2\nprefill_tp = 1\n", ""),
                               "seed = 3", "seed = 3\nabort_every = 2\nabort_while_loading = true"),
                      25, "need a KV transfer: add [disaggregation]"},
                  scenario::parse_serving);
}

TEST(Disaggregation, TheDecodeInstancesOutputsAreTheAggregatedEnginesRequestByRequest) {
  const serving::ServingScenario s = scenario::parse_serving(kScenario, "pd.toml");
  sim::RunConfig o;
  o.seed = 1;
  const serving::ServingRun pd = serving::run_on_sim(s, o);
  ASSERT_TRUE(pd.completed);
  EXPECT_EQ(pd.result.verdict, core::Verdict::pass);
  EXPECT_EQ(pd.paths.kv_pulls, 6);
  serving::ServingScenario agg = s;
  agg.config.disagg = {};
  const serving::ServingRun one = serving::run_on_sim(agg, o);
  ASSERT_EQ(pd.requests.size(), one.requests.size());
  for (size_t i = 0; i < pd.requests.size(); ++i) {
    EXPECT_EQ(pd.requests[i].spec.id, one.requests[i].spec.id);
    EXPECT_EQ(pd.requests[i].output, one.requests[i].output) << "request " << pd.requests[i].spec.id;
  }
}

// The KV transfer monitor on hand-made events: a prefill request's blocks freed after its export,
// while one of its sends has not completed, is a finding; freed after every send, none.
TEST(Disaggregation, TheMonitorReportsBlocksFreedWhileTheirTransferIsInFlight) {
  const engine::EngineConfig d = disaggregated(1, 1, 1, 1);
  const verify::ServingFacts facts = verify::serving_facts(d, engine::make_checkpoint(d.model));
  ASSERT_EQ(facts.kv_routes.size(), 1u);  // prefill rank 1 -> decode rank 0: context, 4 layers, drafter
  const size_t legs = facts.kv_routes[0].segments.size();
  for (size_t sends : {legs - 1, legs}) {
    std::vector<core::Finding> found;
    verify::KvTransferMonitor m(facts, [&](core::Finding f) { found.push_back(std::move(f)); });
    ProbeEvents ev;
    auto at_prefill = [](core::Event e) {
      e.actor = engine::kPrefillEngineActor;
      return e;
    };
    verify::deliver(m, at_prefill(ev.make(core::EventKind::blocks_allocated, -1, 3, 0, {5, 6}, 0)));
    verify::deliver(m, at_prefill(ev.make(core::EventKind::kv_exported, -1, 4, 0, {5, 6}, 8)));
    for (size_t i = 0; i < sends; ++i) {
      const engine::KvSegment& s = facts.kv_routes[0].segments[i];
      verify::deliver(
          m, ev.make(core::EventKind::kv_sent, 1, -1, 0,
                     {static_cast<int64_t>(s.part), s.src_layer, s.dst_layer, s.lane_begin, s.lane_count, 5, 6}, 0));
    }
    core::ProbeSubject finished;
    finished.release = core::Release::finished;
    verify::deliver(m, at_prefill(ev.make(core::EventKind::blocks_freed, -1, 5, 0, {5, 6}, -1, finished)));
    if (sends < legs) {
      ASSERT_EQ(found.size(), 1u);
      EXPECT_EQ(found[0].kind, core::FindingKind::kv_transfer);
      EXPECT_NE(found[0].summary.find("while its transfer was in flight"), std::string::npos) << found[0].summary;
    } else {
      EXPECT_TRUE(found.empty()) << found.front().summary;
    }
  }
}

// A decode-side free before every rank's pulls of the request completed is reported at the free;
// after its kv_ready, none.
TEST(Disaggregation, TheMonitorReportsDecodeBlocksFreedWhileTheirPullsAreInFlight) {
  const engine::EngineConfig d = disaggregated(1, 1, 1, 1);
  const verify::ServingFacts facts = verify::serving_facts(d, engine::make_checkpoint(d.model));
  for (bool ready_first : {false, true}) {
    std::vector<core::Finding> found;
    verify::KvTransferMonitor m(facts, [&](core::Finding f) { found.push_back(std::move(f)); });
    ProbeEvents ev;
    core::Event exported = ev.make(core::EventKind::kv_exported, -1, 4, 0, {5, 6}, 8);
    exported.actor = engine::kPrefillEngineActor;
    core::Event prefill_blocks = ev.make(core::EventKind::blocks_allocated, -1, 3, 0, {5, 6}, 0);
    prefill_blocks.actor = engine::kPrefillEngineActor;
    verify::deliver(m, prefill_blocks);
    verify::deliver(m, exported);
    verify::deliver(m, ev.make(core::EventKind::blocks_allocated, -1, 1, 0, {2, 3}, 0));
    if (ready_first) {
      for (const engine::KvSegment& seg : facts.kv_routes[0].segments)
        verify::deliver(m, ev.make(core::EventKind::kv_pulled, 0, -1, 0,
                                   {static_cast<int64_t>(seg.part), seg.src_layer, seg.dst_layer, seg.lane_begin,
                                    seg.lane_count, 5, 2, 6, 3},
                                   1));
      verify::deliver(m, ev.make(core::EventKind::kv_ready, -1, 2, 0, {}, 1));
    }
    core::ProbeSubject aborted;
    aborted.release = core::Release::aborted;
    verify::deliver(m, ev.make(core::EventKind::blocks_freed, -1, 2, 0, {2, 3}, -1, aborted));
    if (ready_first) {
      EXPECT_TRUE(found.empty()) << found.front().summary;
      continue;
    }
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].kind, core::FindingKind::kv_transfer);
    EXPECT_NE(found[0].summary.find("while its pulls were in flight"), std::string::npos) << found[0].summary;
    EXPECT_NE(found[0].details[0].find("vLLM #32255"), std::string::npos) << found[0].details[0];
  }
}

// Every event of both instances, as a trace writes it.
class EventText final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override { text += core::to_json(e) + "\n"; }
  std::string text;
};

// Two instances, their connectors and the transfers between them are all the simulated world's: the
// same scenario and seed give the same trace, byte for byte, whatever the schedule policy.
TEST(Disaggregation, TheSameSeedGivesTheSameTrace) {
  const serving::ServingScenario s = scenario::parse_serving(kScenario, "pd.toml");
  for (const char* strategy : {"random", "pct:3"}) {
    std::string first;
    for (int run = 0; run < 2; ++run) {
      EventText events;
      sim::RunConfig o;
      o.seed = 7;
      o.strategy = core::parse_strategy(strategy).value();
      o.sinks = {&events};
      const serving::ServingRun r = serving::run_on_sim(s, o);
      ASSERT_TRUE(r.completed) << strategy;
      ASSERT_GT(events.text.size(), 1000u);
      if (run == 0) first = events.text;
      EXPECT_EQ(events.text, first) << strategy;
    }
  }
}

}  // namespace
}  // namespace ppspec::testing
