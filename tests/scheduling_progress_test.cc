// The scheduling progress monitor both ways, over hand-made engine-core probes (batch_scheduled,
// request_scheduled, step_returned, request_released) at pp 2: a runnable request left out of more
// empty serving steps than idle_steps_allowed() is named with its last step and the empty steps;
// a request in flight, released, or sitting out warmup or non-empty steps is not. The end-to-end
// proof is scenarios/regressions/partial_prefill_stays_in_flight.toml and its fault-off twin.
#include <gtest/gtest.h>

#include "tests/monitor_fixture.h"
#include "verify/monitors/scheduling_progress.h"

namespace ppspec::testing {
namespace {

using core::EventKind;

struct Progress : Fixture<verify::SchedulingProgress> {
  // A step's batch: each request with [computed, computed + tokens) of a prefill of prefill_len.
  void batch(int64_t step, std::vector<int64_t> reqs, int64_t computed = 0, int64_t tokens = 4,
             core::StepKind kind = core::StepKind::serving) {
    send(EventKind::batch_scheduled, -1, step, -1, reqs, tokens * static_cast<int64_t>(reqs.size()),
         {.step_kind = kind});
    for (const int64_t r : reqs) send(EventKind::request_scheduled, -1, step, r, {tokens, 40, r}, computed);
  }
  void returned(int64_t step) { send(EventKind::step_returned, -1, step, -1, {}); }
  void release(int64_t req, int64_t step, std::vector<int64_t> fenced = {}) {
    send(EventKind::request_released, -1, step, req, std::move(fenced), 0);
  }
  void freed(int64_t req, int64_t step, std::vector<int64_t> blocks) {
    send(EventKind::blocks_freed, -1, step, req, std::move(blocks), -1);
  }
  // Empty serving steps from..to, each returned once pp = 2 later ones are issued.
  void empty_steps(int64_t from, int64_t to) {
    for (int64_t s = from; s <= to; ++s) {
      batch(s, {});
      if (s - 1 >= from) returned(s - 1);
    }
  }
};

TEST(SchedulingProgress, ARunnableRequestLeftOutOfEmptyStepsIsNamed) {
  Progress fx;
  const int allowed = fx.monitor->idle_steps_allowed();
  EXPECT_EQ(allowed, 8);  // pp 2: twice the three steps that can be in flight, and two
  fx.batch(3, {7}, 0, 32);
  fx.returned(3);
  fx.empty_steps(4, 4 + allowed - 1);
  EXPECT_TRUE(fx.found.empty()) << "sat out only the steps allowed";
  fx.batch(4 + allowed, {});
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, core::Verdict::hang);
  EXPECT_EQ(core::to_string(f.kind), "starvation");
  EXPECT_EQ(f.request, 7);
  EXPECT_EQ(f.engine_step, 12);
  EXPECT_EQ(f.summary,
            "request 7 is runnable and never scheduled: its last step, 3 (a prefill chunk that leaves tokens of the "
            "prefill: tokens 0..31 of its 40-token prefill), returned by engine step 3, and the engine core has since "
            "issued 9 steps with no request in them (steps 4..12)");
  ASSERT_EQ(f.sites.size(), 1u);
  EXPECT_EQ(f.sites[0].actor, "engine");
}

TEST(SchedulingProgress, InFlightReleasedWarmupAndBusyStepsAreNotStarvation) {
  Progress fx;
  // In flight: its step never returns while empty steps go by (a deep pipeline, a slow stage).
  fx.batch(1, {5});
  fx.empty_steps(2, 40);
  // Released (finished, preempted, aborted) with its step returned: nothing to run.
  fx.batch(41, {6});
  fx.returned(41);
  fx.release(6, 41);
  fx.empty_steps(42, 80);
  // Warmup's empty steps are not serving.
  fx.batch(81, {8});
  fx.returned(81);
  for (int64_t s = 82; s < 120; ++s) {
    fx.batch(s, {}, 0, 4, core::StepKind::warmup);
    fx.returned(s);
  }
  // Steps that run other requests: the budget may have gone to them.
  fx.release(8, 120);
  fx.batch(121, {9});
  fx.returned(121);
  for (int64_t s = 122; s < 160; ++s) {
    fx.batch(s, {10});
    fx.returned(s);
  }
  EXPECT_TRUE(fx.found.empty()) << fx.found[0].summary;
}

// A block fenced for a step in flight may be what a runnable request waits for: empty steps while
// one is fenced are not counted (a churn of admissions and preemptions can keep fencing blocks for
// as long as another request decodes: scenarios/found/fence_churn_is_not_starvation.toml); once
// it is freed they are.
TEST(SchedulingProgress, EmptyStepsWhileABlockIsFencedAreNotCounted) {
  Progress fx;
  fx.batch(3, {7});
  fx.returned(3);
  fx.batch(4, {8});
  fx.release(8, 5, {2});  // preempted with step 4 in flight: block 2 fenced
  fx.empty_steps(5, 40);
  EXPECT_TRUE(fx.found.empty()) << fx.found[0].summary;
  fx.freed(8, 41, {2});
  fx.empty_steps(41, 41 + fx.monitor->idle_steps_allowed());
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].request, 7);
}

TEST(SchedulingProgress, AStepOfAnEarlierAdmissionIsNotTheRequestsOwn) {
  Progress fx;
  fx.batch(1, {4});
  fx.release(4, 2);  // preempted while step 1 is in flight
  fx.batch(3, {4});  // resumed: its own step 3 is in flight
  fx.returned(1);    // the stale step returns: the request is still in flight
  fx.empty_steps(4, 30);
  EXPECT_TRUE(fx.found.empty());
}

// A fence outlives its reason once every step it waited for has returned: empty steps while only
// such fences hold blocks are counted against the fence, which is named (the blocks, the request,
// the step it waited for) past the same bound; freed at the return, it is nothing.
TEST(SchedulingProgress, AFenceThatOutlivesTheStepsItWaitedForIsNamed) {
  for (const bool freed : {true, false}) {
    SCOPED_TRACE(freed ? "freed at the return" : "never freed");
    Progress fx;
    const int allowed = fx.monitor->idle_steps_allowed();
    fx.batch(4, {8}, 0, 3);
    fx.release(8, 5, {2, 3});  // preempted with step 4 in flight: blocks 2 and 3 fenced
    fx.returned(4);
    if (freed) fx.freed(8, 5, {2, 3});
    fx.empty_steps(5, 5 + allowed);
    if (freed) {
      EXPECT_TRUE(fx.found.empty()) << fx.found[0].summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    const core::Finding& f = fx.found[0];
    EXPECT_EQ(f.verdict, core::Verdict::hang);
    EXPECT_EQ(core::to_string(f.kind), "starvation");
    EXPECT_EQ(f.request, 8);
    EXPECT_EQ(f.summary,
              "KV blocks 2, 3 of request 8 stay fenced with no step of it in flight: fenced at engine step 4 for its "
              "step 4 in flight, which returned by step 4; the engine core has since issued 9 steps with no request "
              "in them (steps 5..13)");
  }
}

// The engine core stops issuing steps: its engine_stalled probe (free blocks, usable blocks, the
// waiting requests) is named, with what the pool says of why none is admitted.
TEST(SchedulingProgress, AnEngineCoreThatStopsIssuingStepsIsNamedWithWhatItsPoolSays) {
  struct Case {
    const char* what;
    bool fenced;
    int64_t free;
    const char* says;
  };
  for (const Case c : {Case{"a fence never freed", true, 5, "request 8's fenced blocks were never freed"},
                       Case{"a leak", false, 5, "2 blocks are held by no request and no fence"},
                       Case{"a free pool", false, 7, "the whole pool is free"}}) {
    SCOPED_TRACE(c.what);
    Progress fx;
    fx.batch(4, {8}, 0, 3);
    if (c.fenced) fx.release(8, 5, {2, 3});
    fx.returned(4);
    EXPECT_TRUE(fx.found.empty());
    fx.send(EventKind::engine_stalled, -1, 5, -1, {c.free, 7, 9, 10}, 2);
    ASSERT_EQ(fx.found.size(), 1u);
    const core::Finding& f = fx.found[0];
    EXPECT_EQ(f.verdict, core::Verdict::hang);
    EXPECT_EQ(core::to_string(f.kind), "starvation");
    EXPECT_EQ(f.request, 9);
    EXPECT_EQ(f.summary,
              "the engine core stopped issuing steps after engine step 5: nothing is in flight, no request is left to "
              "arrive, and it admits none of its 2 waiting requests (the next in its queue: request 9)");
    ASSERT_GE(f.details.size(), 2u);
    EXPECT_NE(f.details[1].find(c.says), std::string::npos) << f.details[1];
  }
}

}  // namespace
}  // namespace ppspec::testing
