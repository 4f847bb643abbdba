// Data parallelism with an expert-parallel drafter MoE (engine/data_parallel.h,
// engine/expert_dispatch.h): the topology's numbering, the communicators (replica 0 keeps a dp = 1
// engine's), the EP dispatch's arithmetic against the experts computed in one place, and a dp = 2
// run whose every request's output is the dp = 1 run's while the replicas' collectives on each DP
// group line up one for one. The faults are scenarios/regressions/dummy_run_*.toml and their twins.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/file_bytes.h"
#include "core/rng.h"
#include "engine/communicators.h"
#include "engine/config.h"
#include "kernels/expert_dispatch.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

namespace kn = ppspec::kernels;

TEST(DataParallelTopology, ReplicasNumberTheirRanksAsOneEngineDoes) {
  const engine::Topology t{2, 3, 2};  // dp 2, pp 3, tp 2
  EXPECT_EQ(t.ranks(), 12);
  EXPECT_EQ(t.rank_of(2, 1, 1), 6 + 2 * 2 + 1);
  for (int r = 0; r < t.ranks(); ++r) {
    EXPECT_EQ(t.rank_of(t.stage_of(r), t.tp_rank_of(r), t.replica_of(r)), r);
    EXPECT_EQ(t.replica_of(r), r / 6);
  }
}

TEST(DataParallelTopology, ReplicaZeroKeepsTheNamesOfOneEngineAndEachStageShardHasADpGroup) {
  const std::vector<engine::CommunicatorSpec> one = engine::communicators(engine::Topology{1, 2, 2});
  const std::vector<engine::CommunicatorSpec> two = engine::communicators(engine::Topology{2, 2, 2});
  ASSERT_EQ(two.size(), 2 * one.size() + 4);  // + one DP group per (stage, TP rank)
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i].name, one[i].name);
    EXPECT_EQ(two[i].members, one[i].members);
    EXPECT_EQ(two[one.size() + i].name, "dp1." + one[i].name);
  }
  const engine::CommunicatorSpec& group = two.back();
  EXPECT_EQ(group.role, engine::CommRole::data_parallel);
  EXPECT_EQ(group.name, "dp_group.stage1.tp1");
  EXPECT_EQ(group.members, (std::vector<core::RankId>{3, 7}));
}

// The dispatch, experts and combine of every replica, with the all-to-alls done by hand: each
// replica's rows come back as the sum, over the experts' owners, of the owner's fixed-point output.
void check_dispatch(int dp, int rows, int top, int experts, uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> scale(static_cast<size_t>(experts));
  for (float& s : scale) s = static_cast<float>(rng.below(1000)) / 997.0f;
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(dp));
  std::vector<std::vector<float>> weights(static_cast<size_t>(dp));
  std::vector<std::vector<int32_t>> send_ids(static_cast<size_t>(dp)), recv_ids(static_cast<size_t>(dp));
  std::vector<std::vector<float>> send_w(static_cast<size_t>(dp)), recv_w(static_cast<size_t>(dp));
  const size_t entries = static_cast<size_t>(dp) * static_cast<size_t>(rows) * static_cast<size_t>(top);
  const size_t chunk = entries / static_cast<size_t>(dp);
  for (size_t p = 0; p < static_cast<size_t>(dp); ++p) {
    for (int i = 0; i < rows * top; ++i) {
      ids[p].push_back(
          rng.below(5) == 0 ? -1 : static_cast<int32_t>(rng.below(static_cast<uint64_t>(experts))));  // -1: padding
      weights[p].push_back(static_cast<float>(rng.below(4096)) / 4096.0f);
    }
    send_ids[p].resize(entries);
    send_w[p].resize(entries);
    const kn::EpDispatchPackKernel pack{rows, top, dp, ids[p], weights[p], send_ids[p], send_w[p]};
    for (int i = 0; i < rows; ++i) pack.row(i);
  }
  for (size_t to = 0; to < static_cast<size_t>(dp); ++to) {  // chunk `to` of every sender, in sender order
    for (size_t from = 0; from < static_cast<size_t>(dp); ++from)
      for (size_t j = 0; j < chunk; ++j) {
        recv_ids[to].push_back(send_ids[from][to * chunk + j]);
        recv_w[to].push_back(send_w[from][to * chunk + j]);
        // An entry reaches its expert's owner only.
        if (recv_ids[to].back() >= 0) {
          EXPECT_EQ(recv_ids[to].back() % dp, static_cast<int>(to));
        }
      }
  }
  std::vector<std::vector<int32_t>> partial(static_cast<size_t>(dp),
                                            std::vector<int32_t>(static_cast<size_t>(dp * rows)));
  for (size_t p = 0; p < static_cast<size_t>(dp); ++p) {
    std::vector<float> mine = scale;
    for (size_t e = 0; e < mine.size(); ++e)
      if (static_cast<size_t>(static_cast<int>(e) % dp) != p) mine[e] = 0.0f;
    const kn::EpExpertsKernel ex{top, recv_ids[p], recv_w[p], mine, partial[p]};
    for (int i = 0; i < dp * rows; ++i) ex.row(i);
  }
  for (size_t p = 0; p < static_cast<size_t>(dp); ++p) {
    std::vector<int32_t> returned;
    for (size_t owner = 0; owner < static_cast<size_t>(dp); ++owner)
      for (int i = 0; i < rows; ++i)
        returned.push_back(partial[owner][p * static_cast<size_t>(rows) + static_cast<size_t>(i)]);
    std::vector<float> confidence(static_cast<size_t>(rows));
    const kn::EpCombineKernel combine{rows, dp, returned, confidence};
    for (int i = 0; i < rows; ++i) combine.row(i);
    for (int i = 0; i < rows; ++i) {
      int64_t want = 0;  // by owner: its experts' weighted scales summed in float, then to fixed point
      for (int owner = 0; owner < dp; ++owner) {
        float s = 0.0f;
        for (int j = 0; j < top; ++j) {
          const int32_t e = ids[p][static_cast<size_t>(i * top + j)];
          if (e >= 0 && e % dp == owner)
            s += weights[p][static_cast<size_t>(i * top + j)] * scale[static_cast<size_t>(e)];
        }
        want += static_cast<int32_t>(s * kn::kConfidenceOne);
      }
      EXPECT_EQ(confidence[static_cast<size_t>(i)], static_cast<float>(want) / kn::kConfidenceOne)
          << "replica " << p << " row " << i;
    }
  }
}

TEST(ExpertDispatch, EveryRowGetsTheSumOfItsExpertsOwnersOutputs) {
  check_dispatch(2, 12, 2, 8, 1);
  check_dispatch(3, 7, 3, 8, 2);
  check_dispatch(2, 1, 2, 3, 3);
}

// Collectives each rank posted, per communicator (behaviour, read from the event stream).
struct PostedCollectives final : core::EventSink {
  std::map<std::string, std::map<core::RankId, int>, std::less<>> by_comm;
  void on_event(const core::Event& e) override {
    if (e.kind == core::EventKind::op_posted && e.has_op) ++by_comm[std::string(e.comm)][e.rank];
  }
};

TEST(DataParallelServing, EveryRequestsOutputIsTheOneEngineOnesAndTheReplicasCollectivesPair) {
  const serving::ServingScenario s = committed_serving("dp2_pp1_tp2.toml");
  ASSERT_EQ(s.config.topology.dp, 2);
  PostedCollectives posted;
  sim::RunConfig opts;
  opts.sinks = {&posted};
  const serving::ServingRun run = serving::simulate(s.config, s.runtime, opts);
  ASSERT_TRUE(run.completed);
  ASSERT_EQ(run.result.verdict, core::Verdict::pass);
  EXPECT_GT(run.stats.dummy_batches, 0);
  engine::EngineConfig one = s.config;
  one.topology.dp = 1;
  const serving::ServingRun reference = serving::simulate(one, s.runtime, {});
  ASSERT_TRUE(reference.completed);
  std::map<int64_t, std::vector<int64_t>> want;
  for (const auto& r : reference.requests) want[r.spec.id] = r.output;
  ASSERT_EQ(run.requests.size(), want.size());
  for (const auto& r : run.requests) EXPECT_EQ(r.output, want[r.spec.id]) << "request " << r.spec.id;
  int groups = 0;
  for (const auto& [comm, ranks] : posted.by_comm) {
    if (comm.rfind("dp_group.", 0) != 0) continue;
    ++groups;
    ASSERT_EQ(ranks.size(), 2u) << comm;
    EXPECT_EQ(ranks.begin()->second, ranks.rbegin()->second)
        << comm << ": the replicas posted different numbers of collectives";
    EXPECT_GT(ranks.begin()->second, 0) << comm;
  }
  EXPECT_EQ(groups, 2);  // one per TP rank of the one stage
}

// The idle replica's dummy batch skips the drafter's collectives: the busy replica's rank waits in
// one, the idle rank's host waits for the next step, and the engine core for the busy replica's
// output. The cycle closes through the engine core; the report names the rank that skipped the post
// and the collective, as check names it on the same job's dumps. A cycle with no skipped post (the
// serial order inversion) blames no rank.
TEST(DataParallelServing, ASkippedPostIsBlamedOnTheRankThatWentBackToWaitingForWork) {
  const std::string path = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions/dummy_run_skips_drafter.toml";
  const serving::ServingScenario s = scenario::parse_serving(core::file_bytes_or_throw(path), path);
  const core::RunResult r = serving::run_on_sim(s, sim::RunConfig{}).result;
  ASSERT_FALSE(r.findings.empty());
  const core::Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, core::FindingKind::cycle);
  EXPECT_EQ(f.culprit.rank, 0);
  EXPECT_EQ(f.culprit.what, core::Blame::never_posted);
  EXPECT_EQ(f.culprit.comm, "dp_group.stage0.tp0");
  EXPECT_FALSE(f.culprit.p2p);
  EXPECT_TRUE(f.summary.starts_with("rank0 never posted collective #18 on 'dp_group.stage0.tp0', a skipped call"))
      << f.summary;
  const core::RunResult serial = run_toml(scenario_text("comm_order_inversion_serial.toml"));
  ASSERT_FALSE(serial.findings.empty());
  EXPECT_EQ(serial.findings.front().culprit.what, core::Blame::cycle);
  EXPECT_EQ(serial.findings.front().culprit.rank, -1);
}

}  // namespace
}  // namespace ppspec::testing
