// The engine core's scheduler on its own: PP cadence, batch composition, chunked prefill, finishing
// by max tokens, stop token and abort, reuse of req-state indices and KV blocks.
#include <gtest/gtest.h>

#include <deque>
#include <tuple>

#include "engine/scheduler.h"

namespace ppspec::engine {
namespace {

EngineConfig config(int pp, int k) {
  EngineConfig c;
  c.topology.pp = pp;
  c.spec.k = k;
  c.model.block_size = 4;
  c.serving.max_num_seqs = 4;
  c.serving.max_num_batched_tokens = 64;
  c.workload.prompt_max = 20;
  c.workload.output_max = 16;
  return c;
}

RequestSpec request(int64_t id, int prompt_len, int max_tokens, core::Time arrival = 0) {
  RequestSpec r;
  r.id = id;
  r.prompt.assign(static_cast<size_t>(prompt_len), 3);
  r.max_tokens = max_tokens;
  r.arrival = arrival;
  return r;
}

// A model output for `so`: every sampling row gets `accepted + 1` tokens of value `token`
// (1 for a prefill), and rejects the rest of its drafts.
ModelOutput output_for(const SchedulerOutput& so, int64_t token, int accepted = 0) {
  ModelOutput out;
  out.step = so.step;
  for (const ScheduledRequest& s : so.requests) {
    RowOutput row;
    row.idx = s.idx;
    row.id = s.id;
    if (s.produces_sample()) {
      const int n = s.decode() ? std::min(accepted + 1, s.num_tokens) : 1;
      row.num_sampled = n;
      row.num_rejected = s.decode() ? s.num_tokens - n : 0;
      row.tokens.assign(static_cast<size_t>(n), token);
      if (s.decode()) row.drafts_verified.assign(static_cast<size_t>(s.num_tokens - 1), 9);
    }
    out.rows.push_back(row);
  }
  return out;
}

TEST(Scheduler, AtPpTwoARequestRunsEveryOtherStepAndIdleStepsFillTheGap) {
  const EngineConfig c = config(2, 3);
  Scheduler s(c, {request(0, 5, 8), request(1, 6, 8)});
  s.admit_until(0);
  auto s0 = s.schedule(0);
  ASSERT_EQ(s0->requests.size(), 2u);  // both prefills
  EXPECT_EQ(s0->num_tokens, 11);
  EXPECT_EQ(s0->new_requests.size(), 2u);
  // Step 1: both requests are in flight; an idle batch keeps the pipeline's cadence.
  auto s1 = s.schedule(1);
  ASSERT_NE(s1, nullptr);
  EXPECT_TRUE(s1->requests.empty());
  s.update(*s0, output_for(*s0, 7));
  s.update(*s1, output_for(*s1, 7));
  // Step 2: decode rows of 1 + K tokens, decode rows first.
  auto s2 = s.schedule(2);
  ASSERT_EQ(s2->requests.size(), 2u);
  for (const auto& r : s2->requests) {
    EXPECT_TRUE(r.decode());
    EXPECT_EQ(r.num_tokens, 4);
  }
  // Step 3: nothing eligible (scheduled at step 2), even once step 2's output is in.
  s.update(*s2, output_for(*s2, 7, 1));
  auto s3 = s.schedule(3);
  ASSERT_NE(s3, nullptr);
  EXPECT_TRUE(s3->requests.empty());
  auto s4 = s.schedule(4);
  EXPECT_EQ(s4->requests.size(), 2u);
}

TEST(Scheduler, AtPpOneARequestRunsEveryStep) {
  Scheduler s(config(1, 2), {request(0, 4, 8)});
  s.admit_until(0);
  for (int64_t step = 0; step < 4; ++step) {
    auto so = s.schedule(step);
    ASSERT_EQ(so->requests.size(), 1u) << step;
    s.update(*so, output_for(*so, 7));
  }
}

TEST(Scheduler, ChunkedPrefillSplitsAPromptAndOnlyTheLastChunkSamples) {
  EngineConfig c = config(1, 0);
  c.serving.max_num_batched_tokens = 8;
  Scheduler s(c, {request(0, 20, 4)});
  s.admit_until(0);
  std::vector<int> chunks;
  std::vector<bool> samples;
  for (int64_t step = 0; step < 3; ++step) {
    auto so = s.schedule(step);
    ASSERT_EQ(so->requests.size(), 1u);
    chunks.push_back(so->requests[0].num_tokens);
    samples.push_back(so->requests[0].produces_sample());
    s.update(*so, output_for(*so, 7));
  }
  EXPECT_EQ(chunks, (std::vector<int>{8, 8, 4}));
  EXPECT_EQ(samples, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(s.records()[0].output, (std::vector<int64_t>{7}));
}

TEST(Scheduler, WithoutChunkedPrefillAPromptWaitsForAWholeBudget) {
  EngineConfig c = config(1, 0);
  c.serving.max_num_batched_tokens = 12;
  c.serving.chunked_prefill = false;
  Scheduler s(c, {request(0, 10, 4), request(1, 10, 4)});
  s.admit_until(0);
  auto so = s.schedule(0);
  ASSERT_EQ(so->requests.size(), 1u);  // the second prompt does not fit the 2 tokens left
  EXPECT_EQ(so->requests[0].num_tokens, 10);
}

TEST(Scheduler, MaxTokensStopTokenAndAbortFinishRequestsAndFreeTheirSlots) {
  EngineConfig c = config(1, 0);
  c.model.stop_token = 5;
  c.serving.max_num_seqs = 2;
  c.workload.abort_after = 2;
  std::vector<RequestSpec> w = {request(0, 4, 2), request(1, 4, 9), request(2, 4, 9)};
  w[2].abort = true;
  Scheduler s(c, w);
  s.admit_until(0);
  auto so = s.schedule(0);
  ASSERT_EQ(so->requests.size(), 2u);  // max_num_seqs = 2: request 2 waits
  s.update(*so, output_for(*so, 7));
  so = s.schedule(1);
  s.update(*so, output_for(*so, 7));  // request 0 reaches max_tokens = 2
  EXPECT_TRUE(s.records()[0].finished);
  so = s.schedule(2);  // request 2 takes request 0's slot
  ASSERT_EQ(so->new_requests.size(), 1u);
  EXPECT_EQ(so->new_requests[0].id, 2);
  EXPECT_EQ(so->new_requests[0].idx, s.records()[0].idx);
  EXPECT_EQ(so->finished, (std::vector<int32_t>{s.records()[0].idx}));
  ModelOutput out = output_for(*so, 7);
  for (RowOutput& row : out.rows)
    if (row.id == 1) row.tokens = {5};
  s.update(*so, out);  // request 1 samples the stop token
  EXPECT_TRUE(s.records()[1].finished);
  EXPECT_FALSE(s.records()[1].aborted);
  EXPECT_EQ(s.records()[1].output, (std::vector<int64_t>{7, 7, 5}));
  so = s.schedule(3);
  ASSERT_NE(so, nullptr);
  s.update(*so, output_for(*so, 7));  // request 2: 2 tokens, aborted
  EXPECT_TRUE(s.records()[2].finished);
  EXPECT_TRUE(s.records()[2].aborted);
  EXPECT_TRUE(s.done());
}

TEST(Scheduler, AcceptedDraftsAdvanceTheRequestByTheAcceptedCount) {
  Scheduler s(config(1, 3), {request(0, 4, 16)});
  s.admit_until(0);
  auto so = s.schedule(0);
  s.update(*so, output_for(*so, 7));
  so = s.schedule(1);
  ASSERT_EQ(so->requests[0].num_tokens, 4);
  s.update(*so, output_for(*so, 7, 2));  // two drafts accepted: three tokens
  const RequestRecord& r = s.records()[0];
  EXPECT_EQ(r.output.size(), 4u);
  EXPECT_EQ(r.num_computed, 4 + 3);  // prompt + the verified prefix (the rejected draft's row is not computed)
  EXPECT_EQ(r.accepted_drafts, 2);
  EXPECT_EQ(r.verified_drafts.size(), 1u);
}

TEST(Scheduler, KvBlocksAreAllocatedAsTheSequenceGrows) {
  Scheduler s(config(1, 0), {request(0, 6, 8)});
  s.admit_until(0);
  std::vector<size_t> fresh;
  for (int64_t step = 0; step < 4; ++step) {
    auto so = s.schedule(step);
    fresh.push_back(so->requests[0].new_blocks.size());
    s.update(*so, output_for(*so, 7));
  }
  // 6 prompt tokens fill two blocks of 4; positions 6 and 7 fit block 1; position 8 needs a third.
  EXPECT_EQ(fresh, (std::vector<size_t>{2, 0, 0, 1}));
  EXPECT_EQ(s.records()[0].blocks.size(), 3u);
}

TEST(Scheduler, ArrivalsAreAdmittedAtTheirTime) {
  Scheduler s(config(1, 0), {request(0, 4, 2, 0), request(1, 4, 2, 500 * core::kUs)});
  s.admit_until(0);
  auto so = s.schedule(0);
  EXPECT_EQ(so->requests.size(), 1u);
  EXPECT_EQ(s.next_arrival(), 500 * core::kUs);
  s.admit_until(500 * core::kUs);
  s.update(*so, output_for(*so, 7));
  so = s.schedule(1);
  EXPECT_EQ(so->requests.size(), 2u);
}

// The ledger entries of one kind for one request, in order.
std::vector<LedgerEntry> entries(const std::vector<LedgerEntry>& ledger, LedgerEntry::What what, int64_t req) {
  std::vector<LedgerEntry> out;
  for (const LedgerEntry& e : ledger)
    if (e.what == what && e.req == req) out.push_back(e);
  return out;
}

TEST(Scheduler, AStepReservesTheDraftersLookaheadSlots) {
  EngineConfig c = config(1, 3);  // blocks of 4
  for (bool fault : {false, true}) {
    c.faults.no_draft_lookahead_slots = fault;
    Scheduler s(c, {request(0, 4, 8)});
    s.admit_until(0);
    auto so = s.schedule(0);
    // 4 prompt tokens + 3 lookahead slots: two blocks; without the lookahead, one.
    EXPECT_EQ(so->requests[0].new_blocks.size(), fault ? 1u : 2u);
  }
}

// Two requests of 8-token prompts, K = 0, blocks of 4 and 5 usable blocks: both prefill (two
// blocks each); at position 8 each needs a third. The first takes the last free one; the second
// finds none, and as the most recently admitted running request it is the one preempted. It
// resumes once blocks are free, as a prefill of its prompt and its output.
TEST(Scheduler, ARunningRequestShortOfBlocksPreemptsTheMostRecentlyAdmittedOne) {
  EngineConfig c = config(1, 0);
  c.model.num_blocks = 6;
  c.workload.prompt_max = 8;
  c.workload.output_max = 6;
  Scheduler s(c, {request(0, 8, 6), request(1, 8, 6)});
  s.admit_until(0);
  auto so = s.schedule(0);
  ASSERT_EQ(so->requests.size(), 2u);
  s.update(*so, output_for(*so, 7));  // position 8 is next for both
  s.take_ledger();
  so = s.schedule(1);
  ASSERT_EQ(so->requests.size(), 1u) << "request 1 was preempted: request 0 took the last block";
  EXPECT_EQ(so->requests[0].id, 0);
  EXPECT_TRUE(so->new_requests.empty()) << "nothing is admitted in a step that preempted";
  const RequestRecord& victim = s.records()[1];
  EXPECT_EQ(victim.preemptions, 1);
  EXPECT_EQ(victim.first_preempted_at, 1);
  EXPECT_EQ(victim.num_computed, 0);
  EXPECT_EQ(victim.prefill_len(), 9) << "its prompt and its one output token";
  EXPECT_EQ(so->finished, (std::vector<int32_t>{1})) << "its state index goes back to the workers";
  const auto ledger = s.take_ledger();
  ASSERT_EQ(entries(ledger, LedgerEntry::What::released, 1).size(), 1u);
  EXPECT_EQ(entries(ledger, LedgerEntry::What::released, 1)[0].reason, core::Release::preempted);
  EXPECT_EQ(entries(ledger, LedgerEntry::What::freed, 1).at(0).blocks.size(), 2u) << "not in flight: freed at once";
  // Request 0 runs to its end; then request 1 resumes with its prompt and output as a new request.
  while (!s.records()[0].finished) {
    s.update(*so, output_for(*so, 7));
    so = s.schedule(so->step + 1);
  }
  ASSERT_EQ(so->new_requests.size(), 1u);
  EXPECT_EQ(so->new_requests[0].id, 1);
  EXPECT_EQ(so->new_requests[0].prompt, (std::vector<int32_t>{3, 3, 3, 3, 3, 3, 3, 3, 7}));
  EXPECT_EQ(so->requests[0].num_tokens, 9);
  EXPECT_EQ(so->new_requests[0].num_output, 1) << "its next sample is its output token #1";
}

// At pp = 2 a victim may have a step in flight: its blocks stay fenced until that step returns,
// and the step's late output is dropped. Blocks of 4, K = 0, 4 usable blocks: request 0 and
// request 1 prefill 8 tokens each (two blocks each, none left); at step 2 request 0 needs a third
// block while request 1's step 1 is in flight.
TEST(Scheduler, APreemptedRequestsBlocksStayFencedUntilItsStepInFlightReturns) {
  EngineConfig c = config(2, 0);
  c.model.num_blocks = 5;
  c.workload.prompt_max = 8;
  c.workload.output_max = 2;
  for (bool fault : {false, true}) {
    c.faults.late_output_after_preempt = fault;
    Scheduler s(c, {request(0, 8, 2), request(1, 8, 2, 1)});
    s.admit_until(0);
    auto s0 = s.schedule(0);
    s.admit_until(1);
    auto s1 = s.schedule(1);
    ASSERT_EQ(s1->new_requests.size(), 1u);
    s.update(*s0, output_for(*s0, 7));
    s.take_ledger();
    auto s2 = s.schedule(2);
    const auto at_preemption = s.take_ledger();
    ASSERT_EQ(entries(at_preemption, LedgerEntry::What::released, 1).size(), 1u);
    EXPECT_EQ(entries(at_preemption, LedgerEntry::What::released, 1)[0].blocks.size(), fault ? 0u : 2u) << "fenced";
    EXPECT_EQ(entries(at_preemption, LedgerEntry::What::freed, 1).size(), fault ? 1u : 0u);
    // Fenced, request 0 waits for the blocks rather than preempting itself; unfenced, it takes them.
    EXPECT_EQ(s2->requests.size(), fault ? 1u : 0u);
    s.update(*s1, output_for(*s1, 7));  // request 1's late output
    const auto at_return = s.take_ledger();
    EXPECT_EQ(entries(at_return, LedgerEntry::What::freed, 1).size(), fault ? 0u : 1u)
        << "the fence opens with the step";
    const RequestRecord& r1 = s.records()[1];
    // The late output is dropped; the fault adopts it into the reset request (vLLM #49620).
    EXPECT_EQ(r1.output.size(), fault ? 1u : 0u);
    EXPECT_EQ(r1.num_computed, fault ? 8 : 0);
  }
}

// Drives a scheduler as the engine core does at pp = 2 (two batches in flight, each row samples
// token 7 and rejects nothing) and returns whether any step kept a row of a request preempted
// while that step was built.
// Runs a workload of `seed` to its end with two batches in flight; whether a preempted request's
// row stayed in the step that preempted it. Counts the preemptions into `preemptions`, and checks
// each victim against the policy: the request that runs last of those still running (FCFS: the
// newest admitted; priority: the greatest priority, arrival, id).
bool a_preempted_row_stays(EngineConfig c, uint64_t seed, int* preemptions = nullptr) {
  c.workload.seed = seed;
  Scheduler s(c, make_workload(c));
  std::deque<std::shared_ptr<SchedulerOutput>> flight;
  bool stays = false;
  for (int64_t step = 0; step < 4000 && !s.done(); ++step) {
    s.admit_until(step * 100 * core::kUs);  // a step of 100 us
    auto so = s.schedule(step);
    for (const LedgerEntry& e : s.take_ledger()) {
      if (e.what != LedgerEntry::What::released || e.reason != core::Release::preempted) continue;
      if (preemptions != nullptr) ++*preemptions;
      const RequestRecord& v = s.records()[static_cast<size_t>(e.req)];
      for (const RequestRecord& r : s.records()) {
        if (r.idx < 0 || r.finished) continue;
        if (c.serving.scheduling_policy == SchedulingPolicy::fcfs)
          EXPECT_GE(v.admitted_step, r.admitted_step) << "request " << r.spec.id << " was admitted after the victim";
        else
          EXPECT_GE(std::tuple(v.spec.priority, v.spec.arrival, v.spec.id),
                    std::tuple(r.spec.priority, r.spec.arrival, r.spec.id))
              << "request " << r.spec.id << " runs after the victim " << v.spec.id;
      }
      if (so)
        for (const ScheduledRequest& r : so->requests) stays |= r.id == e.req;
    }
    if (so) flight.push_back(so);
    if (flight.size() == 2 || (!so && !flight.empty())) {
      s.update(*flight.front(), output_for(*flight.front(), 7));
      flight.pop_front();
    }
  }
  EXPECT_TRUE(s.done()) << "seed " << seed;
  return stays;
}

// Two stages, prompts of up to four chunks of a 16-token budget, a KV cache of 10 blocks of 16.
EngineConfig preempting_config() {
  EngineConfig c = config(2, 0);
  c.model.num_blocks = 10;
  c.model.block_size = 16;
  c.serving.max_num_batched_tokens = 16;
  c.workload.num_requests = 24;
  c.workload.prompt_min = 2;
  c.workload.prompt_max = 64;
  c.workload.output_min = 16;
  c.workload.output_max = 40;
  return c;
}

// Under the priority policy the victim is the request that runs last, which the schedule's walk
// in running order may already have scheduled: its row must leave the step (vLLM #28558); under
// the fault it stays.
TEST(Scheduler, APriorityVictimAlreadyInTheStepLeavesIt) {
  EngineConfig c = preempting_config();
  c.serving.scheduling_policy = SchedulingPolicy::priority;
  c.workload.priority_levels = 3;
  c.workload.arrival = Arrival::poisson;  // a higher priority arrives after a lower one was admitted
  c.workload.mean_gap_us = 20;
  c.faults.preempt_keeps_spec_tokens = true;
  uint64_t seed = 1;
  while (seed < 200 && !a_preempted_row_stays(c, seed)) ++seed;
  ASSERT_LT(seed, 200u) << "no workload preempted a request already in its step";
  c.faults.preempt_keeps_spec_tokens = false;
  EXPECT_FALSE(a_preempted_row_stays(c, seed)) << "seed " << seed;
}

// FCFS preempts the last running request, which the walk in running order has not reached: no
// victim is ever in its step, so the fault changes nothing.
TEST(Scheduler, AnFcfsVictimIsNeverInItsStep) {
  EngineConfig c = preempting_config();
  c.faults.preempt_keeps_spec_tokens = true;
  int preemptions = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) EXPECT_FALSE(a_preempted_row_stays(c, seed, &preemptions)) << seed;
  EXPECT_GT(preemptions, 40) << "the workloads must preempt for the claim to say anything";
}

// vLLM's request queues: FCFS admits in arrival order; the priority policy the lowest priority
// value first, arrival (then the request id) breaking ties.
TEST(Scheduler, ThePriorityPolicyAdmitsTheLowestValueFirst) {
  for (SchedulingPolicy policy : {SchedulingPolicy::fcfs, SchedulingPolicy::priority}) {
    EngineConfig c = config(1, 0);
    c.serving.scheduling_policy = policy;
    c.serving.max_num_seqs = 1;
    std::vector<RequestSpec> w = {request(0, 4, 2), request(1, 4, 2), request(2, 4, 2, 1), request(3, 4, 2)};
    w[0].priority = 2, w[1].priority = 1, w[2].priority = 0, w[3].priority = 1;
    Scheduler s(c, w);
    std::vector<int64_t> admitted;
    for (int64_t step = 0; step < 100 && !s.done(); ++step) {
      s.admit_until(step);
      auto so = s.schedule(step);
      if (!so) continue;
      for (const NewRequest& n : so->new_requests) admitted.push_back(n.id);
      s.update(*so, output_for(*so, 7));
    }
    const std::vector<int64_t> fcfs = {0, 1, 3, 2}, priority = {1, 2, 3, 0};
    EXPECT_EQ(admitted, policy == SchedulingPolicy::fcfs ? fcfs : priority);
  }
}

TEST(Scheduler, AnAbortIsFoundInEveryBatchInFlightUnlessTheScanLooksAtTheCurrentOneOnly) {
  EngineConfig c = config(4, 0);
  c.workload.abort_in_flight = true;
  c.workload.abort_after = 1;
  for (bool fault : {false, true}) {
    c.faults.abort_scan_current_batch = fault;
    std::vector<RequestSpec> w = {request(0, 4, 8)};
    w[0].abort = true;
    Scheduler s(c, w);
    s.admit_until(0);
    auto s0 = s.schedule(0);
    s.update(*s0, output_for(*s0, 7));  // one output token: the abort is due once it is in flight again
    std::vector<std::shared_ptr<SchedulerOutput>> flight;
    for (int64_t step = 1; step <= 4; ++step) flight.push_back(s.schedule(step));  // steps 1..3 idle, 4 decodes it
    ASSERT_EQ(flight.back()->requests.size(), 1u);
    for (int64_t step = 5; step <= 7; ++step) s.schedule(step);  // at 7 its step 4 is the oldest in flight
    const auto ledger = s.take_ledger();
    ASSERT_EQ(entries(ledger, LedgerEntry::What::abort_arrived, 0).size(), 1u);
    EXPECT_EQ(s.records()[0].finished, !fault)
        << "the fault looks at steps 6 and 3 only; the request's batch is step 4";
  }
}

}  // namespace
// Async scheduling's lookahead batch at pp = 1 (two batches in flight): the request's next step is
// scheduled while its previous one is in flight, with that step's drafts counted as accepted; when
// the step returns with drafts rejected the count is corrected, and the next schedule is exact.
TEST(Scheduler, AtDepthPpPlusOneAStepIsScheduledAheadWithItsPredecessorsDraftsCountedAsAccepted) {
  EngineConfig c = config(1, 2);
  c.serving.max_concurrent_batches = 2;
  Scheduler s(c, {request(0, 5, 12)});
  s.admit_until(0);
  auto s0 = s.schedule(0);  // the prefill
  auto s1 = s.schedule(1);  // ahead of it: a decode of 1 + K
  ASSERT_EQ(s1->requests.size(), 1u);
  EXPECT_EQ(s1->requests[0].num_computed, 5);
  EXPECT_EQ(s1->requests[0].num_tokens, 3);
  s.update(*s0, output_for(*s0, 7));
  auto s2 = s.schedule(2);  // ahead of step 1, whose 2 drafts count as accepted
  ASSERT_EQ(s2->requests.size(), 1u);
  EXPECT_EQ(s2->requests[0].num_computed, 8);
  s.update(*s1, output_for(*s1, 7, 0));  // both drafts rejected: 5 + 1 computed
  EXPECT_EQ(s.records()[0].num_computed, 6);
  EXPECT_EQ(s.records()[0].output.size(), 2u);
  s.update(*s2, output_for(*s2, 7, 2));  // step 2 ran from the workers' exact count: 6 + 3
  EXPECT_EQ(s.records()[0].num_computed, 9);
  EXPECT_EQ(s.records()[0].verified_position.back(), 7) << "step 2's first draft sat at position 6 + 1";
  EXPECT_EQ(s.records()[0].steps_ahead, 2);
  auto s3 = s.schedule(3);
  EXPECT_EQ(s3->requests[0].num_computed, 9) << "nothing in flight: exact again";
}

// Without the lookahead batch a request with a step in flight is never scheduled, and a request
// whose step in flight will surely end it is not scheduled ahead (vLLM's async guard).
TEST(Scheduler, NothingIsScheduledAheadAtDepthPpOrOfARequestItsStepInFlightEnds) {
  for (int batches : {0, 2}) {
    EngineConfig c = config(1, 2);
    c.serving.max_concurrent_batches = batches;
    Scheduler s(c, {request(0, 5, 1)});  // one output token: the prefill's
    s.admit_until(0);
    auto s0 = s.schedule(0);
    auto s1 = s.schedule(1);
    EXPECT_TRUE(s1->requests.empty()) << batches;
  }
}

// The async guard reads output placeholders, which only a sampling step adds: a one-token request's
// prefill chunk in flight that leaves tokens of its prompt samples nothing, so its next chunk is
// scheduled ahead of it; the final chunk in flight samples the one token, and nothing follows it.
TEST(Scheduler, APrefillChunkInFlightDoesNotHoldBackTheNextChunk) {
  EngineConfig c = config(1, 2);
  c.serving.max_concurrent_batches = 2;
  c.serving.max_num_batched_tokens = 8;
  Scheduler s(c, {request(0, 20, 1)});
  s.admit_until(0);
  auto s0 = s.schedule(0);
  auto s1 = s.schedule(1);  // step 0's chunk in flight
  ASSERT_EQ(s1->requests.size(), 1u);
  EXPECT_EQ(s1->requests[0].num_computed, 8);
  s.update(*s0, output_for(*s0, 7));
  auto s2 = s.schedule(2);  // the final chunk, while step 1's is in flight
  ASSERT_EQ(s2->requests.size(), 1u);
  EXPECT_TRUE(s2->requests[0].produces_sample());
  s.update(*s1, output_for(*s1, 7));
  auto s3 = s.schedule(3);  // the final chunk in flight samples the one token
  EXPECT_TRUE(s3 == nullptr || s3->requests.empty());
}

// A request let go of while two of its steps are in flight keeps its blocks until the newer returns.
TEST(Scheduler, BlocksOfARequestWithTwoStepsInFlightStayFencedUntilTheNewerReturns) {
  EngineConfig c = config(1, 2);
  c.serving.max_concurrent_batches = 2;
  c.model.stop_token = 7;
  Scheduler s(c, {request(0, 5, 12)});
  s.admit_until(0);
  auto s0 = s.schedule(0);
  auto s1 = s.schedule(1);
  s.take_ledger();
  s.update(*s0, output_for(*s0, 7));  // the stop token: finished while step 1 is in flight
  ASSERT_TRUE(s.records()[0].finished);
  std::vector<LedgerEntry> ledger = s.take_ledger();
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].what, LedgerEntry::What::released);
  EXPECT_FALSE(ledger[0].blocks.empty()) << "fenced, not freed";
  EXPECT_TRUE(s.fenced());
  s.update(*s1, output_for(*s1, 9));  // stale: dropped, and the fence returns
  ledger = s.take_ledger();
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].what, LedgerEntry::What::freed);
  EXPECT_FALSE(s.fenced());
  EXPECT_EQ(s.records()[0].output, (std::vector<int64_t>{7}));
}

}  // namespace ppspec::engine
