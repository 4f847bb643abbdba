// The pipeline-bubble monitor both ways, over hand-made events: the engine core's batch_scheduled
// and request_scheduled probes (what a step needed) and the ranks' op_posted on the feedback and
// pipeline communicators (what they posted). The fixture is pp 2, tp 2: ranks 0 and 1 are stage 0,
// 2 and 3 the last stage; pp_broadcast0 is ranks 0 and 2, rooted at rank 2.
#include <gtest/gtest.h>

#include "core/probes.h"
#include "tests/monitor_fixture.h"
#include "verify/monitors/pipeline_bubble.h"

namespace ppspec::testing {
namespace {

using core::EventKind;
using core::Verdict;

// One row as the engine core scheduled it.
struct BubbleRow {
  int64_t req;
  int64_t num_computed;
  int64_t num_scheduled;
  int64_t prefill_len;
};

struct BubbleFixture : Fixture<verify::PipelineBubble> {
  void batch(int64_t step, const std::vector<BubbleRow>& rows) {
    std::vector<int64_t> ids;
    int64_t tokens = 0;
    for (const BubbleRow& r : rows) {
      ids.push_back(r.req);
      tokens += r.num_scheduled;
    }
    send(EventKind::batch_scheduled, -1, step, -1, ids, tokens, {.step_kind = core::StepKind::serving});
    for (const BubbleRow& r : rows)
      send(EventKind::request_scheduled, -1, step, r.req, {r.num_scheduled, r.prefill_len, r.req}, r.num_computed);
  }
  // `rank` posts the feedback broadcast of `step` on its column's communicator (root: the last stage).
  void post(core::RankId rank, int64_t step, std::string_view comm = "pp_broadcast0",
            core::OpKind kind = core::OpKind::broadcast) {
    core::Event e = events.make(EventKind::op_posted, rank, step, -1, {}, -1, {}, comm);
    e.actor = rank == 0 ? "rank0.side" : "rank2.side";
    e.has_op = true;
    e.op = core::OpDesc{
        kind, core::Dtype::i64, 8, 4, kind == core::OpKind::broadcast ? 2 : 1, core::Label{"feedback.sampled", step}};
    e.cseq = step;
    e.seq = next_seq++;
    verify::deliver(*monitor, e);
  }
};

TEST(PipelineBubble, FeedbackPostedForAStepOfNonFinalChunksOnlyIsABubble) {
  BubbleFixture fx;
  fx.batch(5, {{3, 0, 32, 120}, {4, 32, 32, 100}});
  fx.post(0, 5);
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, Verdict::pipeline_bubble);
  EXPECT_EQ(core::to_string(f.kind), "pipeline-bubble");
  EXPECT_EQ(f.engine_step, 5);
  EXPECT_EQ(f.summary,
            "rank0 (stage 0) waits for feedback of engine step 5 that no request of the step needs: broadcast i64[2, "
            "4] root rank2 "
            "'feedback.sampled@step5'; the step's 2 requests, 3 and 4, are all non-final prefill chunks: no row "
            "produces a sample");
  ASSERT_GE(f.details.size(), 3u);
  EXPECT_EQ(f.details[0], "request 3: prefill tokens [0, 32) of 120, a non-final chunk: its sample is discarded");
  EXPECT_EQ(f.details[1], "request 4: prefill tokens [32, 64) of 100, a non-final chunk: its sample is discarded");
  EXPECT_NE(f.details[2].find("vLLM #38726"), std::string::npos) << f.details[2];
  ASSERT_EQ(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[0].rank, 0);
  EXPECT_EQ(f.sites[0].actor, "rank0.side");
  EXPECT_EQ(f.sites[0].comm, "pp_broadcast0");
  fx.post(2, 5);
  fx.batch(6, {{5, 0, 16, 64}});
  fx.post(0, 6);
  EXPECT_EQ(fx.found.size(), 1u) << "the first bubble only";
}

TEST(PipelineBubble, TheLastStagesBroadcastIsNamedAsTheSender) {
  BubbleFixture fx;
  fx.batch(7, {{9, 16, 16, 48}});
  fx.post(2, 7);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_NE(fx.found[0].summary.find("rank2 (stage 1, the last) sends feedback of engine step 7"), std::string::npos)
      << fx.found[0].summary;
  EXPECT_NE(fx.found[0].summary.find("the step's only request, 9, is a non-final prefill chunk"), std::string::npos)
      << fx.found[0].summary;
}

TEST(PipelineBubble, AStepWithAFinalChunkOrADecodeRowNeedsItsFeedback) {
  BubbleFixture fx;
  fx.batch(3, {{3, 0, 32, 120}, {4, 96, 24, 120}});  // request 4's final chunk samples
  fx.post(0, 3);
  fx.post(2, 3);
  fx.batch(4, {{5, 40, 4, 40}, {6, 0, 32, 120}});  // request 5 decodes (1 + 3 drafts)
  fx.post(0, 4);
  fx.post(2, 4);
  EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
}

TEST(PipelineBubble, AStepOfNonFinalChunksThatPostsNoFeedbackPasses) {
  BubbleFixture fx;
  fx.batch(5, {{3, 0, 32, 120}, {4, 32, 32, 100}});
  fx.post(0, 5, "pp0", core::OpKind::send);  // its activations flow on: the pipeline communicator
  fx.post(1, 5, "tp0", core::OpKind::all_reduce);
  EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
}

TEST(PipelineBubble, AnIdleStepPostsNothingAndAPostForItIsABubble) {
  BubbleFixture quiet;
  quiet.batch(8, {});
  EXPECT_TRUE(quiet.found.empty());
  BubbleFixture posting;
  posting.batch(8, {});
  posting.post(0, 8);
  ASSERT_EQ(posting.found.size(), 1u);
  EXPECT_NE(posting.found[0].summary.find("the step schedules no request"), std::string::npos)
      << posting.found[0].summary;
}

TEST(PipelineBubble, AStepNotWhollySeenIsNotJudged) {
  BubbleFixture fx;
  fx.post(0, 2);  // a step the monitor never saw scheduled (a trace cut short, a forgotten step)
  fx.send(EventKind::batch_scheduled, -1, 3, -1, {3, 4}, 64, {.step_kind = core::StepKind::serving});
  fx.send(EventKind::request_scheduled, -1, 3, 3, {32, 120, 3}, 0);
  fx.post(0, 3);  // request 4's row not seen yet: it might sample
  EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
}

TEST(PipelineBubble, AtPp1ThereIsNoFeedbackCommunicator) {
  verify::ServingFacts facts;
  facts.pp = 1;
  facts.tp = 2;
  engine::Topology topology;
  topology.pp = 1;
  topology.tp = 2;
  for (const engine::CommunicatorSpec& c : engine::communicators(topology)) facts.comm_roles.emplace(c.name, c.role);
  std::vector<core::Finding> found;
  verify::PipelineBubble monitor(facts, [&found](core::Finding f) { found.push_back(std::move(f)); });
  ProbeEvents events;
  verify::deliver(monitor,
                  events.make(EventKind::batch_scheduled, -1, 4, -1, {3}, 32, {.step_kind = core::StepKind::serving}));
  verify::deliver(monitor, events.make(EventKind::request_scheduled, -1, 4, 3, {32, 120, 0}, 0));
  core::Event e = events.make(EventKind::op_posted, 0, 4, -1, {}, -1, {}, "tp0");
  e.has_op = true;
  e.op = core::OpDesc{core::OpKind::all_reduce, core::Dtype::u32, 64, 8, -1, core::Label{"tp.layer0", 4}};
  verify::deliver(monitor, e);
  EXPECT_TRUE(found.empty()) << found.front().summary;
}

}  // namespace
}  // namespace ppspec::testing
