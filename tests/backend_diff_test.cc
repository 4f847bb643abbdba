// The sim = GPU oracle's comparison, proven both ways on runs it can make here: two simulated runs
// of one scenario (any seed, any policy) agree on every request and every communicator's operation
// sequence; a run whose tokens, drafts or operations differ is named at its first difference.
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/test_util.h"
#include "verify/oracles/backend_diff.h"

namespace ppspec::testing {
namespace {

struct Observed {
  serving::ServingRun run;
  verify::OpLog ops;
};

std::unique_ptr<Observed> observe(const serving::ServingScenario& s, uint64_t seed, const char* strategy) {
  auto o = std::make_unique<Observed>();
  sim::RunConfig opts;
  opts.seed = seed;
  opts.strategy = *core::parse_strategy(strategy);
  opts.sinks.push_back(&o->ops);
  o->run = serving::simulate(s.config, s.runtime, opts);
  EXPECT_TRUE(o->run.completed);
  return o;
}

TEST(BackendDiff, RunsOfOneScenarioUnderAnySeedAndPolicyAgreeOnRequestsAndOperations) {
  const auto s = committed_serving("pp2_tp2_k5.toml");
  const auto a = observe(s, 1, "random");
  for (const char* strategy : {"random", "pct:3"})
    for (uint64_t seed : {2, 7}) {
      const auto b = observe(s, seed, strategy);
      EXPECT_FALSE(verify::compare_requests(a->run.requests, b->run.requests)) << strategy << " seed " << seed;
      ASSERT_EQ(a->ops.batches(), b->ops.batches());
      const auto f = verify::compare_ops(a->ops, b->ops);
      EXPECT_FALSE(f) << (f ? f->summary : "");
    }
  EXPECT_GT(a->ops.ops().size(), 4u) << "TP and PP communicators of every rank";
  EXPECT_NE(verify::agreement(a->run.requests, a->ops).find("identical: 64 requests"), std::string::npos);
}

TEST(BackendDiff, AChangedTokenOrDraftIsNamedByRequestTokenAndStep) {
  const auto s = committed_serving("pp2_tp1_k5.toml");
  const auto a = observe(s, 1, "random");
  auto changed = a->run.requests;
  ASSERT_GT(changed[3].output.size(), 5u);
  changed[3].output[5] += 1;
  auto f = verify::compare_requests(a->run.requests, changed);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->verdict, core::Verdict::output_divergence);
  EXPECT_EQ(f->summary, "request " + std::to_string(changed[3].spec.id) +
                            ": output token 5 differs between the simulator and the GPUs");
  EXPECT_EQ(f->engine_step, a->run.requests[3].output_step[5]);

  changed = a->run.requests;
  ASSERT_FALSE(changed[2].verified_drafts.empty());
  changed[2].verified_drafts.back().back() ^= 1;
  f = verify::compare_requests(a->run.requests, changed);
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("the drafts verified at its decode step"), std::string::npos) << f->summary;
  EXPECT_EQ(f->engine_step, changed[2].verified_step.back());

  changed = a->run.requests;
  changed.pop_back();
  f = verify::compare_requests(a->run.requests, changed);
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("ran on the simulator and not on the GPUs"), std::string::npos) << f->summary;
}

// Sequences that differ only in their last operation, or by one operation more, are not the same.
TEST(BackendDiff, TheLastOperationAndALongerSequenceCountToo) {
  auto feed = [](verify::OpLog& log, int n, const char* last_label) {
    for (int i = 0; i < n; ++i) {
      core::Event e;
      e.kind = core::EventKind::op_posted;
      e.rank = 0;
      e.comm = "pp0";
      e.has_op = true;
      e.op.kind = core::OpKind::send;
      e.op.dtype = core::Dtype::u32;
      e.op.count = 8;
      e.op.peer = 1;
      e.op.label = core::Label{i + 1 == n ? last_label : "act.hidden", i};
      log.on_event(e);
    }
  };
  verify::OpLog a, b, c;
  feed(a, 4, "act.hidden");
  feed(b, 4, "act.ctx");
  feed(c, 5, "act.hidden");
  auto f = verify::compare_ops(a, b);
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("operation 3 differs"), std::string::npos) << f->summary;
  EXPECT_EQ(f->engine_step, 3);
  f = verify::compare_ops(a, c);
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("operation 4 differs"), std::string::npos) << f->summary;
  EXPECT_EQ(f->details[0], "simulator: nothing");
  EXPECT_FALSE(verify::compare_ops(a, a));
}

TEST(BackendDiff, ADifferentWireFormatIsNamedAtItsFirstOperation) {
  // The same workload with the single-payload feedback: the same tokens, other operations.
  auto s = committed_serving("pp2_tp1_k5.toml");
  const auto three = observe(s, 1, "random");
  s.config.spec.feedback = engine::Feedback::single_payload;
  const auto single = observe(s, 1, "random");
  EXPECT_FALSE(verify::compare_requests(three->run.requests, single->run.requests));
  const auto f = verify::compare_ops(three->ops, single->ops);
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("on 'pp_broadcast0': operation"), std::string::npos) << f->summary;
  ASSERT_EQ(f->details.size(), 2u);
  EXPECT_NE(f->details[0].find("feedback.sampled"), std::string::npos) << f->details[0];
  EXPECT_NE(f->details[1].find("feedback.payload"), std::string::npos) << f->details[1];
  ASSERT_EQ(f->sites.size(), 1u);
  EXPECT_EQ(f->sites[0].comm, "pp_broadcast0");
}

}  // namespace
}  // namespace ppspec::testing
