// Kernel unit tests, including the vLLM test vectors of tests/v1/spec_decode/test_dflash_prepare_inputs.py
// and tests/kernels/moe/test_topk_softplus_sqrt.py (reference notes §3.2, §4).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/drafter.h"
#include "kernels/launch.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/rejection_sample.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {
namespace {

// A byte vector seen as bools (std::vector<bool> has no contiguous storage).
template <typename B>
Span<B> as_bools(std::vector<uint8_t>& v) {
  return Span<B>(reinterpret_cast<B*>(v.data()), static_cast<int64_t>(v.size()));
}

constexpr int64_t PAD = kPadSlot;

// The fixture of test_dflash_prepare_inputs.py: max_num_reqs=4, max_num_tokens=16, K=3,
// block_size=4, mask id 123, sample_from_anchor; buffers pre-filled with -1 (slots with -2).
struct Dflash {
  static constexpr int kMaxReqs = 4, kMaxTokens = 16, kK = 3, kBlock = 4, kMaxBlocks = 8;
  std::vector<int32_t> idx_mapping, ctx_start, ctx_end, num_sampled, num_rejected;
  std::vector<int64_t> target_positions;
  std::vector<int64_t> last_sampled = std::vector<int64_t>(kMaxReqs, -1);
  std::vector<int64_t> next_prefill = std::vector<int64_t>(kMaxReqs, -1);
  std::vector<int32_t> block_table;  // per batch row
  std::vector<float> req_temperature = std::vector<float>(kMaxReqs, 0.0f);
  std::vector<int64_t> req_seeds = std::vector<int64_t>(kMaxReqs, 0);
  std::vector<int64_t> context_positions, context_slots;
  std::vector<int32_t> input_ids = std::vector<int32_t>(kMaxTokens, -1);
  std::vector<int64_t> positions = std::vector<int64_t>(kMaxTokens, -1);
  std::vector<uint8_t> is_padding = std::vector<uint8_t>(kMaxTokens, 0);
  std::vector<int64_t> query_slots = std::vector<int64_t>(kMaxTokens, -2);
  std::vector<int32_t> sample_indices = std::vector<int32_t>(kMaxTokens, -1);
  std::vector<int64_t> sample_pos = std::vector<int64_t>(kMaxTokens, -1);
  std::vector<int32_t> sample_idx = std::vector<int32_t>(kMaxTokens, -1);
  std::vector<int32_t> query_start_loc = std::vector<int32_t>(kMaxReqs + 1, -1);
  std::vector<int32_t> seq_lens = std::vector<int32_t>(kMaxReqs, -1);
  std::vector<float> temperature = std::vector<float>(kMaxReqs, -1.0f);
  std::vector<int64_t> seeds = std::vector<int64_t>(kMaxReqs, -1);
  bool clear_padding = true;

  void run() {
    context_positions.assign(target_positions.size(), -1);
    context_slots.assign(target_positions.size(), -2);
    PrepareDflashInputsKernel k{};
    k.num_reqs = static_cast<int32_t>(idx_mapping.size());
    k.num_query_per_req = kK;
    k.max_num_reqs = kMaxReqs;
    k.max_num_tokens = kMaxTokens;
    k.idx_mapping = idx_mapping;
    k.ctx_start = ctx_start;
    k.ctx_end = ctx_end;
    k.target_positions = target_positions;
    k.num_sampled = num_sampled;
    k.num_rejected = num_rejected;
    k.last_sampled = last_sampled;
    k.next_prefill_tokens = next_prefill;
    k.block_table = block_table;
    k.max_blocks = kMaxBlocks;
    k.block_size = kBlock;
    k.mask_id = 123;
    k.max_model_len = 1024;
    k.sample_from_anchor = true;
    k.req_temperature = req_temperature;
    k.req_seeds = req_seeds;
    k.clear_padding = clear_padding;
    k.context_positions = context_positions;
    k.context_slot_mapping = context_slots;
    k.input_ids = input_ids;
    k.positions = positions;
    k.is_padding = as_bools<bool>(is_padding);
    k.query_slot_mapping = query_slots;
    k.sample_indices = sample_indices;
    k.sample_pos = sample_pos;
    k.sample_idx_mapping = sample_idx;
    k.query_start_loc = query_start_loc;
    k.seq_lens = seq_lens;
    k.temperature = temperature;
    k.seeds = seeds;
    run_on_cpu(k, k.num_reqs);
  }
};

template <typename T>
std::vector<T> slice(const std::vector<T>& v, size_t from, size_t to) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
}

TEST(PrepareDflashInputs, ExcludesRejectedContextSuffix) {
  Dflash d;
  d.idx_mapping = {2};
  d.ctx_start = {0};
  d.ctx_end = {4};
  d.target_positions = {10, 11, 12, 13};
  d.num_sampled = {1};
  d.num_rejected = {2};
  d.last_sampled[2] = 99;
  d.block_table = {0, 0, 7, 8, 0, 0, 0, 0};
  d.req_temperature[2] = 1.0f;
  d.req_seeds[2] = 17;
  d.run();
  EXPECT_EQ(d.context_positions, (std::vector<int64_t>{10, 11, 0, 0}));
  EXPECT_EQ(d.context_slots, (std::vector<int64_t>{30, 31, PAD, PAD}));
  EXPECT_EQ(slice(d.input_ids, 0, 3), (std::vector<int32_t>{99, 123, 123}));
  EXPECT_EQ(slice(d.positions, 0, 3), (std::vector<int64_t>{12, 13, 14}));
  EXPECT_EQ(slice(d.query_slots, 0, 3), (std::vector<int64_t>{32, 33, 34}));
  EXPECT_EQ(slice(d.sample_indices, 0, 3), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(slice(d.sample_pos, 0, 3), (std::vector<int64_t>{13, 14, 15}));
  EXPECT_EQ(slice(d.sample_idx, 0, 3), (std::vector<int32_t>{2, 2, 2}));
  EXPECT_EQ(d.temperature[2], 1.0f);
  EXPECT_EQ(d.seeds[2], 17);
  // The #56956 padding contract.
  EXPECT_EQ(slice(d.is_padding, 0, 3), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(slice(d.is_padding, 3, 16), std::vector<uint8_t>(13, 1));
  EXPECT_EQ(slice(d.input_ids, 3, 16), std::vector<int32_t>(13, 0));
  EXPECT_EQ(slice(d.positions, 3, 16), std::vector<int64_t>(13, 0));
  EXPECT_EQ(slice(d.query_slots, 3, 16), std::vector<int64_t>(13, PAD));
  EXPECT_EQ(slice(d.sample_idx, 3, 16), std::vector<int32_t>(13, -1));
  EXPECT_EQ(d.query_start_loc, (std::vector<int32_t>{0, 3, 3, 3, 3}));
  EXPECT_EQ(slice(d.seq_lens, 1, 4), (std::vector<int32_t>{0, 0, 0}));
}

TEST(PrepareDflashInputs, CompactsNoncontiguousRequestSlots) {
  Dflash d;
  d.idx_mapping = {3, 1};
  d.ctx_start = {0, 2};
  d.ctx_end = {2, 4};
  d.target_positions = {10, 11, 21, 22};
  d.num_sampled = {1, 1};
  d.num_rejected = {0, 0};
  d.last_sampled[3] = 99;
  d.last_sampled[1] = 77;
  d.block_table = std::vector<int32_t>(16, 0);
  for (int b = 0; b < 8; ++b) {
    d.block_table[static_cast<size_t>(b)] = 10 + b;
    d.block_table[static_cast<size_t>(8 + b)] = 20 + b;
  }
  d.run();
  EXPECT_EQ(slice(d.input_ids, 0, 6), (std::vector<int32_t>{99, 123, 123, 77, 123, 123}));
  EXPECT_EQ(slice(d.positions, 0, 6), (std::vector<int64_t>{12, 13, 14, 23, 24, 25}));
  EXPECT_EQ(slice(d.sample_idx, 0, 6), (std::vector<int32_t>{3, 3, 3, 1, 1, 1}));
  EXPECT_EQ(slice(d.is_padding, 0, 6), std::vector<uint8_t>(6, 0));
  EXPECT_EQ(slice(d.is_padding, 6, 16), std::vector<uint8_t>(10, 1));
}

TEST(PrepareDflashInputs, NeverWritesTheNullBlock) {
  Dflash d;
  d.idx_mapping = {0};
  d.ctx_start = {0};
  d.ctx_end = {2};
  d.target_positions = {4, 5};
  d.num_sampled = {1};
  d.num_rejected = {0};
  d.last_sampled[0] = 5;
  d.block_table = std::vector<int32_t>(8, 0);  // every block is the null block
  d.run();
  EXPECT_EQ(d.context_slots, (std::vector<int64_t>{PAD, PAD}));
  EXPECT_EQ(slice(d.query_slots, 0, 3), (std::vector<int64_t>{PAD, PAD, PAD}));
}

TEST(PrepareDflashInputs, WithoutTheFixPaddingRowsKeepStaleValues) {
  Dflash d;
  d.clear_padding = false;
  d.idx_mapping = {2};
  d.ctx_start = {0};
  d.ctx_end = {1};
  d.target_positions = {10};
  d.num_sampled = {1};
  d.num_rejected = {0};
  d.last_sampled[2] = 99;
  d.block_table = {0, 0, 7, 8, 0, 0, 0, 0};
  d.run();
  EXPECT_EQ(d.input_ids[5], -1) << "left from the previous batch";
  EXPECT_EQ(d.is_padding[5], 0) << "not marked as padding";
  EXPECT_EQ(d.query_slots[5], PAD) << "slots were always padded";
}

// ---- the top-k router ----

struct Router {
  int rows, experts, k;
  std::vector<float> gating, bias;
  std::vector<uint8_t> padding;
  std::vector<int32_t> ids;
  std::vector<float> weights;
  bool honor = true;
  Router(int r, int e, int kk)
      : rows(r),
        experts(e),
        k(kk),
        gating(static_cast<size_t>(r * e)),
        bias(static_cast<size_t>(e), 0.0f),
        padding(static_cast<size_t>(r), 0),
        ids(static_cast<size_t>(r * kk)),
        weights(static_cast<size_t>(r * kk)) {}
  void run(float scale = 1.0f) {
    TopkSoftplusSqrtKernel t{gating, bias, as_bools<const bool>(padding), experts, k, true, scale, honor, ids, weights};
    run_on_cpu(t, rows);
  }
};

// The torch reference of the vLLM test, in plain loops (double precision for the weights).
void reference(const Router& r, int row, std::vector<int32_t>& ids, std::vector<double>& w, double scale) {
  std::vector<double> scores(static_cast<size_t>(r.experts));
  for (int e = 0; e < r.experts; ++e)
    scores[static_cast<size_t>(e)] =
        std::sqrt(std::log1p(std::exp(static_cast<double>(r.gating[static_cast<size_t>(row * r.experts + e)]))));
  std::vector<bool> taken(static_cast<size_t>(r.experts), false);
  ids.clear();
  w.clear();
  for (int j = 0; j < r.k; ++j) {
    int best = -1;
    for (int e = 0; e < r.experts; ++e)
      if (!taken[static_cast<size_t>(e)] &&
          (best < 0 || scores[static_cast<size_t>(e)] + r.bias[static_cast<size_t>(e)] >
                           scores[static_cast<size_t>(best)] + r.bias[static_cast<size_t>(best)]))
        best = e;
    taken[static_cast<size_t>(best)] = true;
    ids.push_back(best);
    w.push_back(scores[static_cast<size_t>(best)]);
  }
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x = x / sum * scale;
}

TEST(TopkSoftplusSqrt, RealRowsMatchTheReference) {
  Router r(8, 16, 4);
  for (size_t i = 0; i < r.gating.size(); ++i)
    r.gating[i] = static_cast<float>(mix32(static_cast<uint32_t>(i)) % 1000) / 100.0f - 5.0f;
  for (size_t e = 0; e < r.bias.size(); ++e) r.bias[e] = static_cast<float>(e % 3) * 0.01f;
  r.run(2.5f);
  for (int row = 0; row < 8; ++row) {
    std::vector<int32_t> ids;
    std::vector<double> w;
    reference(r, row, ids, w, 2.5);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(r.ids[static_cast<size_t>(row * 4 + j)], ids[static_cast<size_t>(j)]);
      EXPECT_NEAR(r.weights[static_cast<size_t>(row * 4 + j)], w[static_cast<size_t>(j)], 1e-5);
    }
  }
}

TEST(TopkSoftplusSqrt, PaddedRowsRouteToNoExpertEvenWithNanGatingAndNegativeBias) {
  Router r(4, 8, 2);
  for (size_t i = 0; i < r.gating.size(); ++i) r.gating[i] = 0.5f;
  for (int e = 0; e < 8; ++e) r.gating[static_cast<size_t>(2 * 8 + e)] = std::numeric_limits<float>::quiet_NaN();
  for (auto& b : r.bias) b = -3.0f;  // makes every expert "look selectable" for a pad row
  r.padding = {0, 0, 1, 1};
  r.run();
  for (int row : {2, 3})
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(r.ids[static_cast<size_t>(row * 2 + j)], -1);
      EXPECT_EQ(r.weights[static_cast<size_t>(row * 2 + j)], 0.0f);
      EXPECT_TRUE(std::isfinite(r.weights[static_cast<size_t>(row * 2 + j)]));
    }
  EXPECT_GE(r.ids[0], 0);
}

TEST(TopkSoftplusSqrt, TheMaskIsReadAtRunTime) {
  Router r(2, 4, 1);
  r.padding = {1, 0};
  r.run();
  EXPECT_EQ(r.ids[0], -1);
  EXPECT_GE(r.ids[1], 0);
  r.padding = {0, 1};  // the same "graph", new mask contents
  r.run();
  EXPECT_GE(r.ids[0], 0);
  EXPECT_EQ(r.ids[1], -1);
}

TEST(TopkSoftplusSqrt, IgnoringThePaddingSelectsExpertsForPaddedRows) {
  Router r(2, 4, 1);
  r.padding = {0, 1};
  r.honor = false;
  r.run();
  EXPECT_GE(r.ids[1], 0) << "the fault router_ignores_padding";
}

// ---- prepare_inputs, post_update, rejection sampling ----

TEST(PrepareInputs, DecodeRowsCombineLastSampledAndDraftsAndPaddingIsCleared) {
  const int k = 2;
  std::vector<int32_t> qs{0, 3}, idx{1}, num_computed{0, 5}, prefill_len{0, 3}, prompt(2 * 8, 0), table(2 * 4, 0);
  table[4] = 2;  // request 1: block 2 holds positions 0..15
  std::vector<int64_t> last_sampled{0, 42}, drafts{0, 0, 7, 8};
  std::vector<int32_t> ids(8, -1), row_req(8, -9);
  std::vector<int64_t> pos(8, -1), slots(8, -9);
  std::vector<uint8_t> pad(8, 0);
  PrepareInputsKernel p{1, 3,     qs, idx, num_computed, prefill_len, prompt, 8,     last_sampled,        drafts,
                        k, table, 4,  16,  true,         ids,         pos,    slots, as_bools<bool>(pad), row_req,
                        8};
  run_on_cpu(p, 2);
  EXPECT_EQ(slice(ids, 0, 3), (std::vector<int32_t>{42, 7, 8}));
  EXPECT_EQ(slice(pos, 0, 3), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(slice(slots, 0, 3), (std::vector<int64_t>{37, 38, 39}));
  EXPECT_EQ(slice(ids, 3, 8), std::vector<int32_t>(5, 0));
  EXPECT_EQ(slice(pad, 3, 8), std::vector<uint8_t>(5, 1));
  EXPECT_EQ(slice(slots, 3, 8), std::vector<int64_t>(5, PAD));
  EXPECT_EQ(slice(row_req, 3, 8), std::vector<int32_t>(5, -1));
}

TEST(PostUpdate, SkipsNegativeIndexAndAdoptsDrafts) {
  const int k = 2;
  std::vector<int32_t> idx{-1, 1}, ns{1, 2}, nr{0, 1}, ql{3, 3};
  std::vector<int64_t> sampled{5, -1, -1, 6, 9, -1}, adopted{0, 0, 3, 4};
  std::vector<int64_t> last{0, 0};
  std::vector<int32_t> computed{10, 10}, total{0, 0};
  std::vector<int64_t> table{0, 0, 0, 0};
  PostUpdateKernel u{idx, sampled, ns, nr, ql, adopted, k, true, last, computed, total, table};
  run_on_cpu(u, 2);
  EXPECT_EQ(last, (std::vector<int64_t>{0, 9}));
  EXPECT_EQ(computed, (std::vector<int32_t>{10, 9})) << "deferred: only the rejection is subtracted";
  EXPECT_EQ(total, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(table, (std::vector<int64_t>{0, 0, 3, 4}));
}

TEST(RejectionSample, GreedyAcceptsTheMatchingPrefixThenTheTargetToken) {
  // One request, K = 3: rows hold [bonus, d1, d2, d3]; targets per row [d1, d2, x, y].
  std::vector<int32_t> start{0}, n{4}, ids{11, 21, 22, 23};
  std::vector<int64_t> greedy{21, 22, 30, 31}, seeds{1}, out_index{0};
  std::vector<uint32_t> h{0, 0, 0, 0}, spread{0};
  std::vector<int64_t> sampled(4);
  std::vector<int32_t> ns(1), nr(1);
  RejectionSampleKernel s{start, n, ids, greedy, h, seeds, out_index, spread, 64, 4, sampled, ns, nr};
  run_on_cpu(s, 1);
  EXPECT_EQ(sampled, (std::vector<int64_t>{21, 22, 30, -1}));
  EXPECT_EQ(ns[0], 3);
  EXPECT_EQ(nr[0], 1);
}

TEST(RejectionSample, TemperatureAcceptsADraftWithTheTargetsProbability) {
  // A draft equal to the greedy token is accepted with p = 4096 / total.
  const int vocab = 32;
  const uint32_t spread = 400;
  int accepted = 0;
  const int trials = 20000;
  for (int seed = 0; seed < trials; ++seed) {
    std::vector<int32_t> start{0}, n{2}, ids{1, 5};
    std::vector<int64_t> greedy{5, 6}, seeds{seed}, out_index{0};
    std::vector<uint32_t> h{77, 78}, spr{spread};
    std::vector<int64_t> sampled(2);
    std::vector<int32_t> ns(1), nr(1);
    RejectionSampleKernel s{start, n, ids, greedy, h, seeds, out_index, spr, vocab, 2, sampled, ns, nr};
    run_on_cpu(s, 1);
    if (ns[0] == 2) ++accepted;
    if (ns[0] == 1) {
      EXPECT_NE(sampled[0], 5) << "a rejected draft is never re-emitted";
    }
  }
  uint64_t total = 0;
  for (int v = 0; v < vocab; ++v) total += target_weight(77, 5, v, spread);
  const double p = static_cast<double>(kGreedyWeight) / static_cast<double>(total);
  EXPECT_NEAR(static_cast<double>(accepted) / trials, p, 0.015);
}

// ---- the toy model: TP shards sum to the unsharded layer ----

TEST(ToyModel, TensorParallelShardsSumToTheWholeLayer) {
  const int lanes = 8, rows = 3;
  std::vector<uint32_t> x(static_cast<size_t>(rows * lanes)), w(lanes), u(lanes);
  for (size_t i = 0; i < x.size(); ++i) x[i] = mix32(static_cast<uint32_t>(i) + 1);
  for (int j = 0; j < lanes; ++j) {
    w[static_cast<size_t>(j)] = mix32(static_cast<uint32_t>(100 + j));
    u[static_cast<size_t>(j)] = mix32(static_cast<uint32_t>(200 + j));
  }
  std::vector<int32_t> req(rows, 0);
  std::vector<uint32_t> whole(static_cast<size_t>(rows * lanes));
  run_on_cpu(LayerPartialKernel{req, x, w, u, lanes, 0, lanes, whole}, rows);
  for (int tp : {2, 4}) {
    const int per = lanes / tp;
    std::vector<uint32_t> sum(static_cast<size_t>(rows * lanes), 0);
    for (int t = 0; t < tp; ++t) {
      std::vector<uint32_t> shard(static_cast<size_t>(rows * per)), part(static_cast<size_t>(rows * lanes));
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < per; ++j)
          shard[static_cast<size_t>(r * per + j)] = x[static_cast<size_t>(r * lanes + t * per + j)];
      run_on_cpu(LayerPartialKernel{req, shard, w, u, lanes, t * per, per, part}, rows);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    EXPECT_EQ(sum, whole) << "tp " << tp;
  }
}

}  // namespace
}  // namespace ppspec::kernels
