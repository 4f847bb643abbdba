// The KV ownership and leak monitors, each both ways, over hand-made ledgers: the engine core's
// blocks_allocated / blocks_freed / request_released / step_returned probes and the ranks'
// kv_slots. Blocks are 16 slots (ServingFacts' default): block b holds slots [16b, 16b + 16).
#include <gtest/gtest.h>

#include "core/probes.h"
#include "tests/monitor_fixture.h"
#include "verify/monitors/kv_ownership.h"
#include "verify/monitors/leak_checker.h"
#include "verify/monitors/scheduling_cadence.h"

namespace ppspec::testing {
namespace {

using core::EventKind;
using core::KvWriter;
using core::Release;
using core::Verdict;

template <typename M>
struct Ledger : Fixture<M> {
  void allocate(int64_t req, int64_t step, int64_t first_index, std::vector<int64_t> blocks) {
    this->send(EventKind::blocks_allocated, -1, step, req, std::move(blocks), first_index);
  }
  void release(int64_t req, int64_t step, Release why, std::vector<int64_t> fenced = {}) {
    this->send(EventKind::request_released, -1, step, req, std::move(fenced), 0, {.release = why});
  }
  void free(int64_t req, int64_t step, Release why, std::vector<int64_t> blocks) {
    this->send(EventKind::blocks_freed, -1, step, req, std::move(blocks), -1, {.release = why});
  }
  void returned(int64_t step) { this->send(EventKind::step_returned, -1, step, -1, {}); }
  void share(int64_t req, int64_t step, std::vector<int64_t> blocks) {
    this->send(EventKind::blocks_shared, -1, step, req, std::move(blocks), 0);
  }
  void cache(int64_t req, int64_t step, std::vector<int64_t> blocks) {
    this->send(EventKind::blocks_cached, -1, step, req, std::move(blocks));
  }
  // Exactly one finding, whose summary says `text`.
  void expect_one(std::string_view text) {
    ASSERT_EQ(this->found.size(), 1u);
    EXPECT_NE(this->found[0].summary.find(text), std::string::npos) << this->found[0].summary;
  }
  // One row (position, slot) stored by `rank` for `req` at `step`.
  void store(core::RankId rank, int64_t step, int64_t req, int64_t position, int64_t slot,
             KvWriter w = KvWriter::target) {
    this->send(EventKind::kv_slots, rank, step, -1, {req, position, slot}, -1, {.kv_writer = w});
  }
};

TEST(KvOwnership, StoresThroughTheRequestsOwnBlocksAtTheirColumnPass) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3, 4});
  fx.store(0, 1, 7, 0, 48);   // position 0: block 3, offset 0
  fx.store(2, 1, 7, 17, 65);  // position 17: block 4, offset 1
  fx.store(2, 1, 7, 17, 65, KvWriter::draft_query);
  EXPECT_TRUE(fx.found.empty());
}

TEST(KvOwnership, AStoreIntoABlockNeverGivenToTheRequestIsReportedWithRankBlockAndStep) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.allocate(8, 1, 0, {5});
  fx.store(2, 1, 7, 1, 81);  // block 5: request 8's
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, Verdict::kv_violation);
  EXPECT_EQ(core::to_string(f.kind), "kv-ownership");
  EXPECT_EQ(f.engine_step, 1);
  EXPECT_NE(f.summary.find(
                "rank2 (stage 1) at step 1: the target's KV write for request 7 at position 1 stores into slot 81 of "
                "block 5, which the request does not hold: request 8 holds it since step 1"),
            std::string::npos)
      << f.summary;
  EXPECT_EQ(f.sites.at(0).rank, 2);
}

TEST(KvOwnership, AStoreAtTheWrongColumnOfItsOwnTableIsReported) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3, 4});
  fx.store(0, 1, 7, 2, 66);  // position 2 belongs in block 3, not 4
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_NE(fx.found[0].summary.find("its block table puts position 2 in block 3 at offset 2"), std::string::npos)
      << fx.found[0].summary;
}

// A request preempted while step 1 of it is in flight: fenced, its blocks stay its own until the
// step returns; a rank still finishing step 1 after that is judged by who held them at the return.
TEST(KvOwnership, FencedBlocksStayTheRequestsUntilItsStepReturns) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.release(7, 2, Release::preempted, {3});
  fx.store(2, 1, 7, 0, 48);
  fx.returned(1);
  fx.free(7, 1, Release::preempted, {3});
  fx.allocate(8, 3, 0, {3});
  fx.store(3, 1, 7, 0, 48);  // the other TP rank of the last stage, late
  EXPECT_TRUE(fx.found.empty());
}

// The lookahead batch: step 2 is scheduled, and gives request 7 block 4 for its next positions,
// while step 1 is in flight. A store of step 1 into block 4 reached a position step 1 never
// scheduled; the same store once step 1 returned, by a rank still finishing it, is not judged so.
TEST(KvOwnership, AStoreOfAStepInFlightIntoABlockGivenForALaterStepIsReported) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.allocate(7, 2, 1, {4});
  fx.store(0, 1, 7, 15, 63);  // block 3: given at step 1
  fx.store(0, 2, 7, 16, 64);  // block 4, by step 2 itself
  EXPECT_TRUE(fx.found.empty());
  fx.store(0, 1, 7, 16, 64);
  fx.expect_one(
      "rank0 (stage 0) at step 1: the target's KV write for request 7 at position 16 stores into slot 64 of block 4, "
      "which the request receives only at step 2, scheduled while step 1 was in flight");
}

// Request 7 is preempted with step 1 in flight (block 3 fenced), step 1 returns, and its resumption
// at step 3 is given block 3 again; the other TP rank of the last stage, still finishing step 1,
// stores into it. Benign: the resumption's prefill rewrites it later in that rank's stream.
TEST(KvOwnership, ALateStoreOfAReturnedStepIntoItsResumedRequestsBlockPasses) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.release(7, 2, Release::preempted, {3});
  fx.returned(1);
  fx.free(7, 1, Release::preempted, {3});
  fx.allocate(7, 3, 0, {3});
  fx.store(3, 1, 7, 0, 48);
  EXPECT_TRUE(fx.found.empty());
}

// Request 7 holds blocks 3 and 4 at step 1; step 1 returns; the request is preempted at step 2 and
// resumed at step 3 with the same blocks in the other order. The other TP rank of the last stage,
// still finishing step 1, stores position 16 into block 4, as step 1's table says: not a wrong slot
// of the resumed request's table. The same store while step 1 is still in flight (the blocks freed
// and given again with no fence) is reported.
TEST(KvOwnership, ALateStoreOfAReturnedStepIsJudgedByItsOwnAdmissionsTable) {
  for (const bool step_returned : {true, false}) {
    Ledger<verify::KvOwnership> fx;
    fx.allocate(7, 1, 0, {3, 4});
    if (step_returned) fx.returned(1);
    fx.release(7, 2, Release::preempted);
    fx.free(7, 2, Release::preempted, {3, 4});
    fx.allocate(7, 3, 0, {4, 3});
    fx.store(5, 1, 7, 16, 64);
    if (step_returned) {
      EXPECT_TRUE(fx.found.empty()) << fx.found[0].summary;
    } else {
      fx.expect_one(
          "stores into slot 64 of block 4, which the request receives only at step 3, scheduled while step 1 "
          "was in flight");
    }
  }
}

TEST(KvOwnership, BlocksGivenAwayWhileTheStepIsInFlightAreAWriteAfterFree) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.release(7, 2, Release::preempted);  // no fence
  fx.free(7, 2, Release::preempted, {3});
  fx.allocate(8, 2, 0, {3});
  fx.store(2, 1, 7, 0, 48);  // step 1 has not returned
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "kv-ownership");
  EXPECT_NE(fx.found[0].summary.find("request 8 holds it since step 2"), std::string::npos) << fx.found[0].summary;
}

// vLLM #28558 with a step in flight: request 7 is preempted at the schedule of step 3, which had
// already scheduled its row, while its step 1 is in flight (its blocks fenced). Step 1 returns, the
// fence frees block 3, step 4's schedule gives it to request 8; then a rank runs step 3's stale
// row. The report names the preemption of the step the row belongs to, not the block's new owner.
TEST(KvOwnership, ARowThatOutlivedItsRequestsPreemptionIsNamedAsSuchAfterItsBlocksMovedOn) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.release(7, 3, Release::preempted, {3});
  fx.returned(1);
  fx.free(7, 1, Release::preempted, {3});
  fx.allocate(8, 4, 0, {3});
  fx.store(0, 3, 7, 1, 49);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_NE(fx.found[0].summary.find("request 8 holds it since step 4"), std::string::npos) << fx.found[0].summary;
  ASSERT_EQ(fx.found[0].details.size(), 1u);
  EXPECT_NE(fx.found[0].details[0].find("the engine core preempted request 7 while it built step 3, yet the "
                                        "request's row stayed in that step"),
            std::string::npos)
      << fx.found[0].details[0];
}

TEST(KvOwnership, ARowWithNoSlotIsOutOfTheTable) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.store(2, 1, 7, 16, -1, KvWriter::draft_query);  // column 1: past its one block
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "kv-out-of-table");
  EXPECT_NE(fx.found[0].summary.find("block-table column 1 is past the request's 1 blocks"), std::string::npos)
      << fx.found[0].summary;
}

TEST(KvOwnership, ALedgerThatGivesAHeldBlockIsInconsistent) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  EXPECT_TRUE(fx.found.empty());
  fx.allocate(8, 2, 0, {3});
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_NE(fx.found[0].summary.find("gave block 3 to request 8 at step 2 while request 7 still held it"),
            std::string::npos)
      << fx.found[0].summary;
}

// Prefix caching: request 7 computes blocks 3 and 4 at step 1 and caches them; request 8 hits
// block 3 at step 2 and prefills from position 16 in its own block 6. Its stores there pass, and
// so do request 7's stores of step 1 (the step that computed the block), late or not.
TEST(KvOwnership, ASharedBlockIsReadOnlyToTheRequestThatHitIt) {
  for (bool store_into_hit : {false, true}) {
    Ledger<verify::KvOwnership> fx;
    fx.allocate(7, 1, 0, {3, 4});
    fx.cache(7, 1, {3, 4});
    fx.share(8, 2, {3});
    fx.allocate(8, 2, 1, {6});
    fx.store(2, 1, 7, 15, 63);                      // step 1 at stage 1, after the hit: the computing step
    fx.store(0, 2, 8, 16, 96);                      // position 16: block 6, its own
    if (store_into_hit) fx.store(2, 2, 8, 15, 63);  // the last token of the hit, recomputed into block 3
    if (!store_into_hit) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    fx.expect_one(
        "rank2 (stage 1) at step 2: the target's KV write for request 8 at position 15 stores into slot 63 of block 3, "
        "which the request holds read-only: it shares it through the prefix cache since step 2 (1 request shares it, "
        "request 7 owns it; request 7 computed it, cached at step 1)");
    EXPECT_EQ(core::to_string(fx.found.at(0).kind), "kv-ownership");
    EXPECT_NE(fx.found[0].details.at(0).find("#11186"), std::string::npos);
  }
}

// Preempted with step 1 in flight, request 7 keeps block 3 fenced; resumed at step 3 before step 1
// returns (pp >= 3), it hits the same block: it holds it twice, and the fence's return frees only
// the fenced hold. A late store of step 1 is still its own; a store of its new life is not.
TEST(KvOwnership, AResumedRequestMayShareTheBlocksItsOwnFenceStillHolds) {
  for (bool new_life_store : {false, true}) {
    Ledger<verify::KvOwnership> fx;
    fx.allocate(7, 1, 0, {3});
    fx.cache(7, 1, {3});
    fx.release(7, 2, Release::preempted, {3});
    fx.share(7, 3, {3});
    fx.allocate(7, 3, 1, {5});
    fx.store(2, 1, 7, 3, 51);  // step 1, late, into the block it owned then
    fx.returned(1);
    fx.free(7, 1, Release::preempted, {3});
    fx.store(0, 3, 7, 16, 80);  // its new life prefills after the hit, in block 5
    if (new_life_store) fx.store(0, 3, 7, 3, 51);
    fx.release(7, 6, Release::finished);
    fx.free(7, 6, Release::finished, {3, 5});
    if (!new_life_store) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.at(0).summary;
      continue;
    }
    fx.expect_one("which the request holds read-only: it shares it through the prefix cache since step 3");
  }
}

// A block's content is final once cached: its own request storing into it at a later step (an
// unverified token cached too early) is a finding too.
TEST(KvOwnership, AStoreIntoACachedBlockAfterItsStepIsReported) {
  for (int64_t step : {1, 3}) {
    Ledger<verify::KvOwnership> fx;
    fx.allocate(7, 1, 0, {3});
    fx.cache(7, 1, {3});
    fx.store(0, step, 7, 5, 53);
    if (step == 1) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    fx.expect_one(
        "stores into slot 53 of block 3, which entered the prefix cache at step 1 (no other request shares it yet, "
        "request 7 owns it): its content was final");
  }
}

// Freed by its last holder, a cached block stays cached; given again, it is fresh content.
TEST(KvOwnership, ACachedBlockIsSharedOnlyWhileCachedAndGivenOnlyWhenNobodyHoldsIt) {
  Ledger<verify::KvOwnership> fx;
  fx.allocate(7, 1, 0, {3});
  fx.cache(7, 1, {3});
  fx.share(8, 2, {3});
  fx.release(7, 3, Release::finished);
  fx.free(7, 3, Release::finished, {3});
  fx.allocate(9, 4, 0, {3});  // request 8 still shares it
  fx.expect_one("gave block 3 to request 9 at step 4 while request 8 still shared it through the prefix cache");

  Ledger<verify::KvOwnership> evicted;
  evicted.allocate(7, 1, 0, {3});
  evicted.cache(7, 1, {3});
  evicted.release(7, 3, Release::finished);
  evicted.free(7, 3, Release::finished, {3});
  evicted.allocate(9, 4, 0, {3});  // evicted: fresh content for request 9
  evicted.store(0, 5, 9, 1, 49);   // a later step of request 9 writes its own block
  evicted.share(8, 5, {3});        // no longer cached
  evicted.expect_one("request 8 shares block 3 at step 5 through the prefix cache, but the block is not cached");
}

TEST(LeakChecker, AnAbortedRequestScheduledAgainIsALeak) {
  for (bool released : {true, false}) {
    Ledger<verify::LeakChecker> fx;
    fx.allocate(7, 1, 0, {3, 4});
    fx.send(EventKind::abort_arrived, -1, 4, 7, {});
    if (released) fx.release(7, 4, Release::aborted, {3, 4});
    fx.send(EventKind::batch_scheduled, -1, 5, -1, released ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 7}, 7);
    if (released) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(fx.found[0].verdict, Verdict::leak);
    EXPECT_EQ(core::to_string(fx.found[0].kind), "abort-ignored");
    EXPECT_NE(fx.found[0].summary.find(
                  "request 7 was aborted at step 4, yet the engine core scheduled it again at step 5, holding 2 KV "
                  "blocks"),
              std::string::npos)
        << fx.found[0].summary;
  }
}

TEST(LeakChecker, ServingEndsWithEveryBlockFreeAndEveryRequestReleased) {
  for (bool leak : {false, true}) {
    Ledger<verify::LeakChecker> fx;
    fx.allocate(7, 1, 0, {3});
    fx.allocate(8, 1, 0, {5, 6});
    fx.release(7, 3, Release::finished);
    fx.free(7, 3, Release::finished, {3});
    if (!leak) {
      fx.release(8, 4, Release::finished);
      fx.free(8, 4, Release::finished, {5, 6});
    }
    fx.send(EventKind::serving_ended, -1, 9, -1, {});
    if (!leak) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    ASSERT_EQ(fx.found.size(), 2u);
    EXPECT_EQ(core::to_string(fx.found[0].kind), "blocks-leaked");
    EXPECT_NE(fx.found[0].summary.find("serving ended with 2 KV blocks still held; the first, block 5, by request 8"),
              std::string::npos)
        << fx.found[0].summary;
    EXPECT_EQ(core::to_string(fx.found[1].kind), "request-leaked");
  }
}

// A free block of the prefix cache is no leak; a block a request still shares when serving ends is.
TEST(LeakChecker, CachedFreeBlocksAreNoLeakASharedOneStillHeldIs) {
  for (bool leak : {false, true}) {
    Ledger<verify::LeakChecker> fx;
    fx.allocate(7, 1, 0, {3, 4});
    fx.cache(7, 1, {3, 4});
    fx.share(8, 2, {3});
    fx.release(7, 3, Release::finished);
    fx.free(7, 3, Release::finished, {3, 4});
    if (!leak) fx.free(8, 4, Release::finished, {3});
    fx.release(8, 4, Release::finished);
    fx.send(EventKind::serving_ended, -1, 9, -1, {});
    if (!leak) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    fx.expect_one(
        "serving ended with 1 KV blocks still held; the first, block 3, by request 8 (shared through the prefix "
        "cache)");
  }
}

// pp = 2 (the fixture's): a request whose step 4 sampled may decode again at step 6, not at 5.
// Non-final prefill chunks flow back to back, and a resumption (a schedule carrying its prompt)
// starts the request afresh.
TEST(SchedulingCadence, ARequestDecodesAgainOnlyOnceItsFeedbackCanHaveBeenAdopted) {
  for (bool early : {false, true}) {
    Fixture<verify::SchedulingCadence> fx;
    // value: num_computed; ints: tokens scheduled, prefill length, state index, the prompt if new
    auto schedule = [&](int64_t step, int64_t computed, int64_t tokens, std::vector<int64_t> prompt) {
      std::vector<int64_t> ints{tokens, 8, 2};
      ints.insert(ints.end(), prompt.begin(), prompt.end());
      fx.send(EventKind::request_scheduled, -1, step, 7, std::move(ints), computed);
    };
    schedule(1, 0, 4, {1, 2, 3, 4, 5, 6, 7, 8});  // a non-final chunk ...
    schedule(2, 4, 4, {});                        // ... the next right after it: samples
    schedule(4, 8, 3, {});                        // a decode two steps later
    schedule(early ? 5 : 6, 10, 3, {});
    if (!early) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(core::to_string(fx.found[0].kind), "scheduling-cadence");
    EXPECT_NE(fx.found[0].summary.find(
                  "scheduled request 7 at step 5, 1 step after its step 4: the feedback of step 4 reaches the "
                  "earlier stages only at step 6 (pp = 2)"),
              std::string::npos)
        << fx.found[0].summary;
  }
}

}  // namespace
}  // namespace ppspec::testing
