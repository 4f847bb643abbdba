// The engine core's scheduler on its own: PP cadence, batch composition, chunked prefill, finishing
// by max tokens, stop token and abort, reuse of req-state indices and KV blocks.
#include <gtest/gtest.h>

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
  so = s.schedule(2);                  // request 2 takes request 0's slot
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

}  // namespace
}  // namespace ppspec::engine
