// TRITON_MLA's split of a batch into its decode and prefill paths (engine/attention_groups.h,
// kernels/mla_attention.h), the reorder threshold the target's KV-cache group gets, and the
// attention-route monitor over the split each rank built.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/attention_groups.h"
#include "engine/checkpoint.h"
#include "kernels/mla_attention.h"
#include "tests/probe_events.h"
#include "verify/monitors/attention_route.h"
#include "verify/monitors/serving_monitors.h"

namespace ppspec::testing {
namespace {

namespace kn = kernels;

engine::EngineConfig triton_mla(int k, engine::DraftMethod method, bool merged) {
  engine::EngineConfig c;
  c.model.attention = engine::AttentionBackend::triton_mla;
  c.spec.k = k;
  c.spec.method = method;
  c.faults.draft_shares_target_kv_group = merged;
  return c;
}

// A causal group splits at 1; only DSpark's non-causal layers, merged in, raise it, to 1 + K.
TEST(AttentionGroups, OnlyAMergedNonCausalDraftRaisesTheTargetsThreshold) {
  engine::EngineConfig varlen = triton_mla(3, engine::DraftMethod::dspark, true);
  varlen.model.attention = engine::AttentionBackend::varlen;
  EXPECT_EQ(engine::target_kv_group(varlen).reorder_threshold, 0);
  EXPECT_EQ(engine::target_kv_group(triton_mla(3, engine::DraftMethod::dspark, false)).reorder_threshold, 1);
  const engine::TargetKvGroup merged = engine::target_kv_group(triton_mla(3, engine::DraftMethod::dspark, true));
  EXPECT_TRUE(merged.shares_draft && merged.non_causal_multi_token_decode);
  EXPECT_EQ(merged.reorder_threshold, 4);
  EXPECT_EQ(engine::target_kv_group(triton_mla(3, engine::DraftMethod::eagle, true)).reorder_threshold, 1);
  EXPECT_EQ(engine::target_kv_group(triton_mla(0, engine::DraftMethod::dspark, true)).reorder_threshold, 1);
}

// split_decodes_and_prefills takes the leading requests of at most the threshold's rows, and stops
// at the first longer one.
TEST(AttentionGroups, TheSplitTakesTheLeadingShortQueries) {
  engine::SchedulerOutput so;
  for (int32_t n : {1, 1, 4, 1, 5}) {
    engine::ScheduledRequest r;
    r.id = static_cast<int64_t>(so.requests.size());
    r.num_tokens = n;
    so.requests.push_back(r);
  }
  const engine::AttentionSplit one = engine::split_decodes_and_prefills(so, 1);
  EXPECT_EQ(one.num_decodes, 2);
  EXPECT_EQ(one.num_decode_tokens, 2);
  const engine::AttentionSplit four = engine::split_decodes_and_prefills(so, 4);
  EXPECT_EQ(four.num_decodes, 4);
  EXPECT_EQ(four.num_decode_tokens, 7);
}

constexpr int32_t kBlockSize = 4;
constexpr int32_t kMaxBlocks = 4;
constexpr int32_t kLanes = 4;
constexpr int32_t kSlots = 16 * kBlockSize;

template <typename T>
kn::Span<T> view(std::vector<std::remove_const_t<T>>& v) {
  return kn::Span<T>(v.data(), static_cast<int64_t>(v.size()));
}

// A batch in the engine's order: per request its table row and its query's positions.
struct Batch {
  std::vector<int32_t> idx, input_ids, row_req, block_table, query_start{0}, split{0, 0}, seq_lens;
  std::vector<int64_t> positions, slots;
  std::vector<uint32_t> y, kv, x;

  Batch() : block_table(3 * kMaxBlocks), seq_lens(3), kv(kSlots * kLanes) {
    for (size_t i = 0; i < block_table.size(); ++i) block_table[i] = static_cast<int32_t>(1 + i);
    for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<uint32_t>(i * 2654435761U);
  }
  void add(int32_t req, int64_t first, int32_t rows) {
    idx.push_back(req);
    for (int32_t r = 0; r < rows; ++r) {
      row_req.push_back(req);
      positions.push_back(first + r);
      input_ids.push_back(0);
      slots.push_back(kn::kPadSlot);
    }
    query_start.push_back(static_cast<int32_t>(row_req.size()));
  }
  int64_t rows() const { return static_cast<int64_t>(row_req.size()); }
  kn::LayerOutKernel varlen() {
    y.assign(static_cast<size_t>(rows() * kLanes), 7);
    x.assign(static_cast<size_t>(rows() * kLanes), 0);
    const kn::RowInputs in{view<const int32_t>(input_ids),
                           view<const int64_t>(positions),
                           view<const int64_t>(slots),
                           view<const int32_t>(row_req),
                           view<const int32_t>(block_table),
                           kMaxBlocks,
                           kBlockSize};
    return kn::LayerOutKernel{in,     view<const uint32_t>(y), view<const uint32_t>(kv), kLanes, 0,
                              kLanes, view<uint32_t>(x)};
  }
  // Both paths over every row, the split `decodes` requests and `tokens` rows.
  std::vector<uint32_t> two_paths(int32_t decodes, int32_t tokens) {
    const kn::LayerOutKernel out = varlen();
    split = {decodes, tokens};
    const auto n = static_cast<int64_t>(query_start.size()) - 1;  // the batch's requests
    const kn::DecodeSeqLensKernel lens{view<const int32_t>(query_start), view<const int64_t>(positions),
                                       view<int32_t>(seq_lens)};
    for (int64_t b = 0; b < n; ++b) lens.row(b);
    const kn::MlaDecodeAttentionKernel decode{view<const int32_t>(split), view<const int32_t>(idx),
                                              view<const int32_t>(seq_lens), out};
    const kn::MlaPrefillAttentionKernel prefill{view<const int32_t>(split), out};
    for (int64_t i = 0; i < rows(); ++i) decode.row(i);
    for (int64_t i = 0; i < rows(); ++i) prefill.row(i);
    return x;
  }
  std::vector<uint32_t> one_path() {
    const kn::LayerOutKernel out = varlen();
    for (int64_t i = 0; i < rows(); ++i) out.row(i);
    return x;
  }
};

// One-row queries on the decode path and the rest on the prefill path compute what the varlen
// kernel computes over every row.
TEST(MlaAttention, OneRowQueriesOnTheDecodePathMatchTheVarlenKernel) {
  Batch b;
  b.add(2, 5, 1);
  b.add(0, 9, 1);
  b.add(1, 0, 3);
  const std::vector<uint32_t> varlen = b.one_path();
  EXPECT_EQ(b.two_paths(2, 2), varlen);
}

// A causal verification block on the decode path: program i reads the i-th request's table row and
// sequence length, whatever row of which request it serves.
TEST(MlaAttention, AMultiRowQueryOnTheDecodePathReadsAnotherRequestsKv) {
  Batch b;
  b.add(2, 3, 3);
  b.add(0, 9, 1);
  b.seq_lens.resize(4, 1);  // the entries past the batch's: what an earlier step left
  b.idx.insert(b.idx.end(), {1, 1});
  const std::vector<uint32_t> varlen = b.one_path();
  const std::vector<uint32_t> misrouted = b.two_paths(2, 4);
  auto row = [](const std::vector<uint32_t>& x, int64_t i) {
    return std::vector<uint32_t>(x.begin() + i * kLanes, x.begin() + (i + 1) * kLanes);
  };
  // Program 0 reads the block's own table, but up to its last position: the block's first row
  // attends to the two rows after it (the causal mask lost), as the block's last row does.
  EXPECT_EQ(row(misrouted, 0), row(varlen, 2));
  EXPECT_NE(row(misrouted, 0), row(varlen, 0));
  EXPECT_NE(row(misrouted, 1), row(varlen, 1));  // program 1: the next request's table and length
  b.idx.resize(2);                               // no entry past the batch's: program 2's read is out of bounds
  EXPECT_THROW(b.two_paths(2, 4), kn::KernelOutOfBounds);
}

std::vector<core::Finding> judge(const std::vector<int64_t>& ints, int64_t threshold) {
  const engine::EngineConfig c = triton_mla(3, engine::DraftMethod::dspark, false);
  const verify::ServingFacts facts = verify::serving_facts(c, engine::make_checkpoint(c.model));
  std::vector<core::Finding> found;
  verify::AttentionRoute m(facts, [&](core::Finding f) { found.push_back(std::move(f)); });
  ProbeEvents ev;
  verify::deliver(m, ev.make(core::EventKind::attention_split, 0, 7, -1, ints, threshold));
  return found;
}

// The monitor both ways: one-row queries pass; a four-row block on the decode path is reported,
// naming the request and the DSpark draft's threshold.
TEST(AttentionRouteMonitor, ReportsAMultiRowQueryOnTheDecodePathOnly) {
  EXPECT_TRUE(judge({2, 2, 11, 1, 12, 1}, 1).empty());
  const std::vector<core::Finding> found = judge({5, 2, 11, 4, 12, 1}, 4);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].verdict, core::Verdict::kv_violation);
  EXPECT_EQ(found[0].kind, core::FindingKind::attention_route);
  EXPECT_EQ(found[0].engine_step, 7);
  EXPECT_NE(found[0].summary.find("request 11's 4 query rows"), std::string::npos) << found[0].summary;
  ASSERT_EQ(found[0].details.size(), 3u);
  EXPECT_NE(found[0].details[1].find("vLLM #56952"), std::string::npos) << found[0].details[1];
}

}  // namespace
}  // namespace ppspec::testing
