// The engine's other row kernels on a GPU give the same bits as on the CPU (DESIGN §5): every kernel
// of kernels/engine_kernel_list.h that kernels_gpu_test.cc does not run. The step's input rows and
// the adoption of its samples (prepare_inputs, post_update), the drafter's inputs (with padding
// rows), its context KV, forward and MoE layer, the feedback payload, the request-table gathers and
// scatters, the write check's restore, and the recurrent layer's output, commit and reset. Inputs are random but valid:
// every index a kernel reads from memory lies inside its buffer, and rows that scatter into a table own distinct
// entries (the GPU runs rows at once). Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cuda_launch.h"
#include "tests/gpu/dual_buffer.h"
#include "kernels/launch.h"

namespace ppspec::kernels {
namespace {

// A bool buffer, held as bytes (std::vector<bool> has no data()).
Span<bool> bools(Dual<uint8_t>& d, bool gpu) {
  const Span<uint8_t> s = d.on(gpu);
  return Span<bool>(reinterpret_cast<bool*>(s.data), s.size);
}

// Floats compare by their bits; everything else as it is.
template <class T>
auto bits(const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, float>) {
    std::vector<uint32_t> b(v.size());
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  } else {
    return v;
  }
}

// The CPU run's buffer equals the GPU run's, element by element.
template <class T>
void expect_same(const Dual<T>& d, const char* what) {
  EXPECT_EQ(bits(d.host), bits(d.from_gpu())) << what;
}

using Rng = std::mt19937_64;

int32_t pick(int32_t lo, int32_t hi, Rng& rng) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); }

// n values uniform in [lo, hi].
template <class T>
std::vector<T> uniform(int64_t n, int64_t lo, int64_t hi, Rng& rng) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

std::vector<int64_t> random_i64(int64_t n, Rng& rng) {
  return uniform<int64_t>(n, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), rng);
}

std::vector<float> random_floats(int64_t n, float lo, float hi, Rng& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// n distinct values of [0, m) in random order.
std::vector<int32_t> distinct(int32_t n, int32_t m, Rng& rng) {
  std::vector<int32_t> v(static_cast<size_t>(m));
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng);
  v.resize(static_cast<size_t>(n));
  return v;
}

template <class T>
std::vector<T> filled(int64_t n, T value) {
  return std::vector<T>(static_cast<size_t>(n), value);
}

constexpr int32_t V = 512, K = 3, kMaxReqs = 8, kMaxBlocks = 8, kBlock = 4;

// prepare_inputs' batch: five requests, alternately a prefill chunk (positions inside the prompt)
// and a decode block of 1..K+1 rows (the last sampled token, then drafts; some positions past the
// block table, slot PAD); block tables hold null blocks.
struct StepHost {
  static constexpr int32_t kReqs = 5, kMaxPrompt = 32;
  std::vector<int32_t> query_start{0}, idx, num_computed, prefill_len, prompt, block_table;
  std::vector<int64_t> last_sampled, draft_tokens;
  int32_t num_rows = 0;

  explicit StepHost(Rng& rng)
      : idx(distinct(kReqs, kMaxReqs, rng)),
        num_computed(uniform<int32_t>(kMaxReqs, 0, 60, rng)),
        prefill_len(uniform<int32_t>(kMaxReqs, 8, kMaxPrompt, rng)),
        prompt(uniform<int32_t>(kMaxReqs * kMaxPrompt, 0, V - 1, rng)),
        block_table(uniform<int32_t>(kMaxReqs * kMaxBlocks, 0, 40, rng)),
        last_sampled(uniform<int64_t>(kMaxReqs, 0, V - 1, rng)),
        draft_tokens(uniform<int64_t>(kMaxReqs * K, 0, V - 1, rng)) {
    for (int32_t i = 0; i < kReqs; ++i) {
      const auto req = static_cast<size_t>(idx[static_cast<size_t>(i)]);
      const int32_t plen = prefill_len[req];
      int32_t qlen = 0;
      if (i % 2 == 0) {
        num_computed[req] = pick(0, plen - 1, rng);
        qlen = pick(1, plen - num_computed[req], rng);
      } else {
        num_computed[req] = pick(plen, plen + 6, rng);
        qlen = pick(1, K + 1, rng);
      }
      num_rows += qlen;
      query_start.push_back(num_rows);
    }
  }
};

TEST(GpuEngineKernels, PrepareInputsBuildsTheSameRowsAndPaddingAsTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(21);
  const StepHost s(rng);
  const int32_t padded = s.num_rows + 6, cap = padded + 3;  // rows past padded_rows: never written
  Dual<int32_t> qs(s.query_start), idx(s.idx), computed(s.num_computed), plen(s.prefill_len), prompt(s.prompt);
  Dual<int32_t> blocks(s.block_table);
  Dual<int64_t> last(s.last_sampled), drafts(s.draft_tokens);
  for (bool clear : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "clear_padding " << clear);
    Dual<int32_t> ids(filled<int32_t>(cap, -5)), row_req(filled<int32_t>(cap, -5));
    Dual<int64_t> pos(filled<int64_t>(cap, -5)), slots(filled<int64_t>(cap, -5));
    Dual<uint8_t> pad(filled<uint8_t>(cap, 7));
    for (bool gpu : {false, true})
      run(PrepareInputsKernel{StepHost::kReqs,
                              s.num_rows,
                              qs.on(gpu),
                              idx.on(gpu),
                              computed.on(gpu),
                              plen.on(gpu),
                              prompt.on(gpu),
                              StepHost::kMaxPrompt,
                              last.on(gpu),
                              drafts.on(gpu),
                              K,
                              blocks.on(gpu),
                              kMaxBlocks,
                              kBlock,
                              clear,
                              ids.on(gpu),
                              pos.on(gpu),
                              slots.on(gpu),
                              bools(pad, gpu),
                              row_req.on(gpu),
                              padded},
          StepHost::kReqs + 1, gpu);
    expect_same(ids, "input_ids");
    expect_same(pos, "positions");
    expect_same(slots, "slots");
    expect_same(pad, "is_padding");
    expect_same(row_req, "row_req");
    // Not vacuous: real rows stored, padding rows cleared only with clear_padding, none past the graph.
    for (int32_t i = 0; i < cap; ++i) {
      const auto u = static_cast<size_t>(i);
      EXPECT_EQ(row_req.host[u] >= 0, i < s.num_rows) << i;
      EXPECT_EQ(pad.host[u], i < s.num_rows ? 0 : i < padded && clear ? 1 : 7) << i;
      if (i >= s.num_rows) {
        EXPECT_EQ(slots.host[u], i < padded ? kPadSlot : -5) << i;
      }
    }
  }
}

TEST(GpuEngineKernels, PostUpdateAdoptsTheSameSamplesAsTheCpuDeferredAndOnTheLastStage) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(22);
  constexpr int32_t N = 6;
  std::vector<int32_t> map = distinct(N, kMaxReqs, rng);
  map[1] = map[4] = -1;  // freed since the step, or no sample: skipped
  std::vector<int32_t> ns = uniform<int32_t>(N, 0, K + 1, rng), nr = uniform<int32_t>(N, 0, K, rng);
  ns[0] = K + 1;  // row 0 adopts a sample and rejects a draft, whatever the seed
  nr[0] = 1;
  Dual<int32_t> idx(map), num_sampled(ns), num_rejected(nr), query_len(uniform<int32_t>(N, 1, K + 1, rng));
  Dual<int64_t> sampled(uniform<int64_t>(N * (K + 1), 0, V - 1, rng)), drafts(uniform<int64_t>(N * K, 0, V - 1, rng));
  const auto last0 = uniform<int64_t>(kMaxReqs, 0, V - 1, rng), table0 = uniform<int64_t>(kMaxReqs * K, 0, V - 1, rng);
  const auto computed0 = uniform<int32_t>(kMaxReqs, 10, 100, rng), total0 = uniform<int32_t>(kMaxReqs, 10, 100, rng);
  // Earlier stages (deferred) adopt the relayed drafts; the last stage's update carries none.
  for (bool deferred : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "deferred " << deferred);
    Dual<int64_t> last(last0), table(table0);
    Dual<int32_t> computed(computed0), total(total0);
    for (bool gpu : {false, true})
      run(PostUpdateKernel{idx.on(gpu), sampled.on(gpu), num_sampled.on(gpu), num_rejected.on(gpu), query_len.on(gpu),
                           deferred ? Span<const int64_t>(drafts.on(gpu)) : Span<const int64_t>(), K, deferred,
                           last.on(gpu), computed.on(gpu), total.on(gpu), table.on(gpu)},
          N, gpu);
    expect_same(last, "last_sampled");
    expect_same(computed, "num_computed");
    expect_same(total, "total_len");
    expect_same(table, "draft_tokens");
    // Not vacuous: row 0's request moved; requests of no row, or of a row mapped to -1, did not.
    const auto req0 = static_cast<size_t>(map[0]);
    EXPECT_EQ(last.host[req0], sampled.host[K]);
    EXPECT_NE(total.host[req0], total0[req0]);
    EXPECT_EQ(table.host != table0, deferred);
    for (int32_t req = 0; req < kMaxReqs; ++req) {
      if (std::find(map.begin(), map.end(), req) == map.end()) {
        EXPECT_EQ(computed.host[static_cast<size_t>(req)], computed0[static_cast<size_t>(req)]) << req;
      }
    }
  }
}

// prepare_dflash_inputs' requests: three drafted requests over target rows with rows of undrafted
// requests between them; rejected suffixes, one request's whole context rejected, one that sampled
// nothing (its bonus is the next prefill token); positions past the block table (slot PAD) and
// past max_model_len (clamped). Query rows past kDrafted * K are the graph's padding.
struct DflashHost {
  static constexpr int32_t kDrafted = 3, kStates = 6, kQueryRows = 16, kBlocks = 6, kModelLen = 28;
  std::vector<int32_t> idx, ctx_start, ctx_end, num_sampled, num_rejected, block_rows;
  std::vector<int64_t> target_positions, last_sampled, next_prefill, req_seeds;
  std::vector<float> req_temperature;

  explicit DflashHost(Rng& rng)
      : idx(distinct(kDrafted, kStates, rng)),
        block_rows(uniform<int32_t>(kDrafted * kBlocks, 0, 30, rng)),
        last_sampled(uniform<int64_t>(kStates, 0, V - 1, rng)),
        next_prefill(uniform<int64_t>(kStates, 0, V - 1, rng)),
        req_seeds(random_i64(kStates, rng)),
        req_temperature(random_floats(kStates, 0.0f, 2.0f, rng)) {
    for (int32_t d = 0; d < kDrafted; ++d) {
      for (int32_t gap = pick(0, 2, rng); gap > 0; --gap) target_positions.push_back(pick(0, 30, rng));
      const int32_t len = pick(1, 5, rng), p0 = pick(0, 22, rng);
      ctx_start.push_back(static_cast<int32_t>(target_positions.size()));
      for (int32_t i = 0; i < len; ++i) target_positions.push_back(p0 + i);
      ctx_end.push_back(static_cast<int32_t>(target_positions.size()));
      num_rejected.push_back(d == 1 ? len : pick(0, len - 1, rng));
      num_sampled.push_back(d == 0 ? 0 : pick(1, K + 1, rng));
    }
    target_positions.push_back(pick(0, 30, rng));  // a row past the last request
  }
};

struct DflashBuffers {
  explicit DflashBuffers(const DflashHost& h)
      : idx(h.idx),
        ctx_start(h.ctx_start),
        ctx_end(h.ctx_end),
        num_sampled(h.num_sampled),
        num_rejected(h.num_rejected),
        block_rows(h.block_rows),
        target_positions(h.target_positions),
        last_sampled(h.last_sampled),
        next_prefill(h.next_prefill),
        req_seeds(h.req_seeds),
        req_temperature(h.req_temperature),
        context_positions(filled<int64_t>(static_cast<int64_t>(h.target_positions.size()), -5)),
        context_slots(filled<int64_t>(static_cast<int64_t>(h.target_positions.size()), -5)) {}
  static constexpr int32_t Q = DflashHost::kQueryRows, S = DflashHost::kStates;
  Dual<int32_t> idx, ctx_start, ctx_end, num_sampled, num_rejected, block_rows;
  Dual<int64_t> target_positions, last_sampled, next_prefill, req_seeds;
  Dual<float> req_temperature;
  Dual<int64_t> context_positions, context_slots;
  Dual<int32_t> input_ids{filled<int32_t>(Q, -5)}, sample_indices{filled<int32_t>(Q, -5)};
  Dual<int32_t> sample_idx{filled<int32_t>(Q, -5)}, query_start_loc{filled<int32_t>(S + 1, -5)};
  Dual<int32_t> seq_lens{filled<int32_t>(S, -5)};
  Dual<int64_t> positions{filled<int64_t>(Q, -5)}, query_slots{filled<int64_t>(Q, -5)};
  Dual<int64_t> sample_pos{filled<int64_t>(Q, -5)}, seeds{filled<int64_t>(S, -5)};
  Dual<uint8_t> is_padding{filled<uint8_t>(Q, 7)};
  Dual<float> temperature{filled<float>(S, -1.5f)};

  PrepareDflashInputsKernel kernel(bool gpu, bool clear, bool anchor) {
    PrepareDflashInputsKernel k{};
    k.num_reqs = DflashHost::kDrafted;
    k.num_query_per_req = K;
    k.max_num_reqs = S;
    k.max_num_tokens = Q;
    k.idx_mapping = idx.on(gpu);
    k.ctx_start = ctx_start.on(gpu);
    k.ctx_end = ctx_end.on(gpu);
    k.target_positions = target_positions.on(gpu);
    k.num_sampled = num_sampled.on(gpu);
    k.num_rejected = num_rejected.on(gpu);
    k.last_sampled = last_sampled.on(gpu);
    k.next_prefill_tokens = next_prefill.on(gpu);
    k.block_table = block_rows.on(gpu);
    k.max_blocks = DflashHost::kBlocks;
    k.block_size = kBlock;
    k.mask_id = V - 1;
    k.max_model_len = DflashHost::kModelLen;
    k.sample_from_anchor = anchor;
    k.req_temperature = req_temperature.on(gpu);
    k.req_seeds = req_seeds.on(gpu);
    k.clear_padding = clear;
    k.context_positions = context_positions.on(gpu);
    k.context_slot_mapping = context_slots.on(gpu);
    k.input_ids = input_ids.on(gpu);
    k.positions = positions.on(gpu);
    k.is_padding = bools(is_padding, gpu);
    k.query_slot_mapping = query_slots.on(gpu);
    k.sample_indices = sample_indices.on(gpu);
    k.sample_pos = sample_pos.on(gpu);
    k.sample_idx_mapping = sample_idx.on(gpu);
    k.query_start_loc = query_start_loc.on(gpu);
    k.seq_lens = seq_lens.on(gpu);
    k.temperature = temperature.on(gpu);
    k.seeds = seeds.on(gpu);
    return k;
  }

  void expect_same_outputs() const {
    expect_same(context_positions, "context_positions");
    expect_same(context_slots, "context_slot_mapping");
    expect_same(input_ids, "input_ids");
    expect_same(positions, "positions");
    expect_same(is_padding, "is_padding");
    expect_same(query_slots, "query_slot_mapping");
    expect_same(sample_indices, "sample_indices");
    expect_same(sample_pos, "sample_pos");
    expect_same(sample_idx, "sample_idx_mapping");
    expect_same(query_start_loc, "query_start_loc");
    expect_same(seq_lens, "seq_lens");
    expect_same(temperature, "temperature");
    expect_same(seeds, "seeds");
  }
};

TEST(GpuEngineKernels, PrepareDflashInputsMatchesTheCpuWithAndWithoutClearedPadding) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(23);
  const DflashHost h(rng);
  for (bool clear : {true, false})
    for (bool anchor : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "clear_padding " << clear << ", sample_from_anchor " << anchor);
      DflashBuffers b(h);
      for (bool gpu : {false, true}) run(b.kernel(gpu, clear, anchor), DflashHost::kDrafted, gpu);
      b.expect_same_outputs();
      // Not vacuous: request 0 sampled nothing, so its bonus is its next prefill token; the query rows
      // past the requests are padding, cleared only with clear_padding, their slots PAD regardless.
      EXPECT_EQ(b.input_ids.host[0], h.next_prefill[static_cast<size_t>(h.idx[0])]);
      for (int32_t q = DflashHost::kDrafted * K; q < DflashHost::kQueryRows; ++q) {
        EXPECT_EQ(b.is_padding.host[static_cast<size_t>(q)], clear ? 1 : 7) << q;
        EXPECT_EQ(b.query_slots.host[static_cast<size_t>(q)], kPadSlot) << q;
      }
    }
}

TEST(GpuEngineKernels, DrafterContextKvGatherAndForwardMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(24);
  constexpr int32_t kTargetRows = 20, kSlots = 64, N = 5, kDrafted = 3, kQueryRows = kDrafted * K + 4;
  // Target rows write distinct slots (two rows never race for one), rejected rows PAD.
  const std::vector<int32_t> slot_ids = distinct(kTargetRows, kSlots, rng);
  std::vector<int64_t> slot_map(slot_ids.begin(), slot_ids.end());
  for (auto& s : slot_map) {
    if (pick(0, 3, rng) == 0) s = kPadSlot;
  }
  const std::vector<uint32_t> kv0 = random_words(kSlots, rng);
  Dual<int64_t> ctx_slots(slot_map);
  Dual<uint32_t> c(random_words(kTargetRows, rng)), all_kv(kv0), ranges_kv(kv0);
  // Batch rows 0, 2 and 3 sampled: their requests' context rows, with the others' rows between. Each
  // range is longer than K, so the anchor (its last row not rejected) stays inside it.
  Dual<int32_t> counts(uniform<int32_t>(2 * N, 0, K, rng)), batch_row(std::vector<int32_t>{0, 2, 3});
  Dual<int32_t> ctx_start(std::vector<int32_t>{0, 7, 12}), ctx_end(std::vector<int32_t>{5, 11, 18});
  Dual<int32_t> ns(filled<int32_t>(kDrafted, -5)), nr(filled<int32_t>(kDrafted, -5)),
      anchor(filled<int32_t>(kDrafted, -5));
  // The drafter's query rows: a bonus token at r*K; positions anywhere.
  Dual<int32_t> input_ids(uniform<int32_t>(kQueryRows, 0, V - 1, rng));
  Dual<int64_t> positions(uniform<int64_t>(kQueryRows, 0, 4000, rng)), drafts(filled<int64_t>(kDrafted * K, -5));
  Dual<int64_t> budget_drafts(filled<int64_t>(kDrafted * K, -5));  // an adaptive budget of K - 1 in rows of K
  Dual<uint32_t> embed(random_words(V, rng));
  for (bool gpu : {false, true}) {
    run(DraftContextKvKernel{ctx_slots.on(gpu), c.on(gpu), all_kv.on(gpu)}, kTargetRows, gpu);
    run(DflashGatherKernel{N, counts.on(gpu), batch_row.on(gpu), ctx_end.on(gpu), ns.on(gpu), nr.on(gpu),
                           anchor.on(gpu)},
        kDrafted, gpu);
    run(
        DraftContextKvRangesKernel{
            {ctx_slots.on(gpu), c.on(gpu), ranges_kv.on(gpu)}, ctx_start.on(gpu), ctx_end.on(gpu)},
        kDrafted, gpu);
    run(DraftForwardKernel{K, anchor.on(gpu), c.on(gpu), input_ids.on(gpu), positions.on(gpu), embed.on(gpu),
                           0x9E3779B1U, V, drafts.on(gpu)},
        kDrafted, gpu);
    run(DraftForwardKernel{K - 1, anchor.on(gpu), c.on(gpu), input_ids.on(gpu), positions.on(gpu), embed.on(gpu),
                           0x9E3779B1U, V, budget_drafts.on(gpu), K},
        kDrafted, gpu);
  }
  expect_same(budget_drafts, "drafts (budget K - 1)");
  for (int32_t r = 0; r < kDrafted; ++r)
    EXPECT_EQ(budget_drafts.host[static_cast<size_t>(r * K + K - 1)], V - 1);  // MASK
  expect_same(all_kv, "draft_kv (every row)");
  expect_same(ranges_kv, "draft_kv (drafted ranges)");
  expect_same(ns, "num_sampled");
  expect_same(nr, "num_rejected");
  expect_same(anchor, "anchor_row");
  expect_same(drafts, "drafts");
  // Not vacuous: both KV writes stored, the ranges fewer rows than all; drafts are tokens.
  EXPECT_NE(all_kv.host, kv0);
  EXPECT_NE(ranges_kv.host, kv0);
  EXPECT_NE(ranges_kv.host, all_kv.host);
  for (int64_t t : drafts.host) EXPECT_TRUE(t >= 0 && t < V) << t;
}

TEST(GpuEngineKernels, DrafterGateAndExpertsGiveTheCpusFloatBits) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(25);
  constexpr int32_t kRows = 40, E = 8, kTop = 2;
  // Uncleared padding rows carry stale ids and positions: any value reaches the gate's hash.
  Dual<int32_t> ids(
      uniform<int32_t>(kRows, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), rng));
  Dual<int64_t> positions(uniform<int64_t>(kRows, -1, 1 << 20, rng));
  Dual<float> gating(filled<float>(kRows * E, -99.0f));
  // The router's output, here independent of the gate (the router's weights may differ by an ulp,
  // kernels_gpu_test.cc): expert ids, -1 where a padded row routes to no expert.
  Dual<int32_t> topk_ids(uniform<int32_t>(kRows * kTop, -1, E - 1, rng));
  Dual<float> weights(random_floats(kRows * kTop, 0.0f, 2.0f, rng)), scale(random_floats(E, -3.0f, 3.0f, rng));
  Dual<float> confidence(filled<float>(kRows, -99.0f));
  Dual<int32_t> fixed(filled<int32_t>(kRows, -99));
  for (bool gpu : {false, true}) {
    run(DraftGateKernel{ids.on(gpu), positions.on(gpu), E, gating.on(gpu)}, kRows, gpu);
    run(DraftExpertsKernel{topk_ids.on(gpu), weights.on(gpu), kTop, scale.on(gpu), confidence.on(gpu)}, kRows, gpu);
    run(ConfidenceToFixedKernel{confidence.on(gpu), fixed.on(gpu)}, kRows, gpu);
  }
  expect_same(gating, "gating");
  expect_same(confidence, "confidence");
  expect_same(fixed, "confidence (fixed point, the adaptive budget's)");
  EXPECT_TRUE(std::none_of(fixed.host.begin(), fixed.host.end(), [](int32_t x) { return x == -99; }));
  for (float g : gating.host) EXPECT_TRUE(g >= -5.0f && g < 5.0f) << g;
  EXPECT_TRUE(std::none_of(confidence.host.begin(), confidence.host.end(), [](float x) { return x == -99.0f; }));
}

TEST(GpuEngineKernels, FeedbackPayloadPacksAndUnpacksTheSameBitsAsTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(26);
  constexpr int32_t N = 5;
  const int64_t w = payload_width(K);
  Dual<int64_t> sampled(random_i64(N * (K + 1), rng)), drafts(random_i64(N * K, rng));
  Dual<int32_t> counts(
      uniform<int32_t>(2 * N, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), rng));
  // with_drafts false: the step proposed nothing and the draft columns go out as 0.
  for (bool with_drafts : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "with_drafts " << with_drafts);
    Dual<int64_t> payload(filled<int64_t>(N * w, -5));
    Dual<int64_t> out_sampled(filled<int64_t>(N * (K + 1), -5)), out_drafts(filled<int64_t>(N * K, -5));
    Dual<int32_t> out_counts(filled<int32_t>(2 * N, -5));
    // Each runtime unpacks the payload it packed itself, as an earlier stage does.
    for (bool gpu : {false, true}) {
      run(PackPayloadKernel{N, K, with_drafts, sampled.on(gpu), counts.on(gpu), drafts.on(gpu), payload.on(gpu)}, N,
          gpu);
      run(UnpackPayloadKernel{N, K, payload.on(gpu), out_sampled.on(gpu), out_counts.on(gpu), out_drafts.on(gpu)}, N,
          gpu);
    }
    expect_same(payload, "payload");
    expect_same(out_sampled, "unpacked sampled");
    expect_same(out_counts, "unpacked counts");
    expect_same(out_drafts, "unpacked drafts");
    // Not vacuous: the round trip gives back what was packed.
    EXPECT_EQ(out_sampled.host, sampled.host);
    EXPECT_EQ(out_counts.host, counts.host);
    EXPECT_EQ(out_drafts.host, with_drafts ? drafts.host : filled<int64_t>(N * K, 0));
  }
}

TEST(GpuEngineKernels, RequestTableGathersAndScattersMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(27);
  constexpr int32_t N = 5, kDrafted = 3;
  const std::vector<int32_t> map = distinct(N, kMaxReqs, rng);
  Dual<int32_t> idx(map), query_len(uniform<int32_t>(N, 1, 64, rng)),
      computed(uniform<int32_t>(kMaxReqs, 0, 1000, rng));
  Dual<int32_t> blocks(uniform<int32_t>(kMaxReqs * kMaxBlocks, 0, 40, rng)),
      block_rows(filled<int32_t>(N * kMaxBlocks, -5));
  Dual<int64_t> req_seeds(random_i64(kMaxReqs, rng)), seeds(filled<int64_t>(N, -5));
  Dual<uint32_t> req_spread(random_words(kMaxReqs, rng)), spread(filled<uint32_t>(N, 0xDEADBEEFU));
  Dual<int32_t> output_base(uniform<int32_t>(kMaxReqs, 0, 50, rng)),
      total_len(uniform<int32_t>(kMaxReqs, 100, 200, rng));
  Dual<int32_t> prefill_len(uniform<int32_t>(kMaxReqs, 1, 99, rng));
  Dual<int64_t> out_index(filled<int64_t>(N, -5));
  // The drafter's rows: three of the batch's requests, in another order.
  std::vector<int32_t> draft_map = map;
  std::shuffle(draft_map.begin(), draft_map.end(), rng);
  draft_map.resize(kDrafted);
  Dual<int32_t> draft_idx(draft_map);
  Dual<int64_t> drafts(uniform<int64_t>(kDrafted * K, 0, V - 1, rng)),
      table(uniform<int64_t>(kMaxReqs * K, 0, V - 1, rng));
  Dual<int64_t> gathered(filled<int64_t>(N * K, -5));
  const std::vector<int32_t> computed0 = computed.host;
  for (bool gpu : {false, true}) {
    run(AdvanceNumComputedKernel{idx.on(gpu), query_len.on(gpu), computed.on(gpu)}, N, gpu);
    run(GatherSamplingParamsKernel{idx.on(gpu), req_seeds.on(gpu), req_spread.on(gpu), output_base.on(gpu),
                                   total_len.on(gpu), prefill_len.on(gpu), seeds.on(gpu), spread.on(gpu),
                                   out_index.on(gpu), 0x5DEECE66DLL},
        N, gpu);
    run(GatherBlockRowsKernel{idx.on(gpu), blocks.on(gpu), kMaxBlocks, block_rows.on(gpu)}, N, gpu);
    run(SetDraftTokensKernel{K, draft_idx.on(gpu), drafts.on(gpu), table.on(gpu)}, kDrafted, gpu);
    run(GatherDraftsKernel{K, idx.on(gpu), table.on(gpu), gathered.on(gpu)}, N, gpu);
  }
  expect_same(computed, "num_computed");
  expect_same(seeds, "seeds");
  expect_same(spread, "spread");
  expect_same(out_index, "out_index");
  expect_same(block_rows, "block rows");
  expect_same(table, "draft_tokens");
  expect_same(gathered, "gathered drafts");
  // Not vacuous: each batch row advanced and gathered its own request's entries.
  for (int32_t r = 0; r < N; ++r) {
    const auto u = static_cast<size_t>(r), req = static_cast<size_t>(map[u]);
    EXPECT_EQ(computed.host[req], computed0[req] + query_len.host[u]);
    EXPECT_EQ(seeds.host[u], req_seeds.host[req]);
    EXPECT_EQ(out_index.host[u], output_base.host[req] + total_len.host[req] - prefill_len.host[req]);
    EXPECT_EQ(block_rows.host[u * kMaxBlocks], blocks.host[req * kMaxBlocks]);
  }
  for (int32_t d = 0; d < kDrafted; ++d) {
    const auto r = std::find(map.begin(), map.end(), draft_map[static_cast<size_t>(d)]) - map.begin();
    EXPECT_EQ(gathered.host[static_cast<size_t>(r * K)], drafts.host[static_cast<size_t>(d * K)]) << d;
  }
}

TEST(GpuEngineKernels, RestoreUnwrittenRestoresTheSameElementsAsTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(28);
  constexpr int32_t kElems = 41;
  for (int32_t eb : {1, 4, 8}) {
    SCOPED_TRACE(::testing::Message() << "elem_bytes " << eb);
    // Per element: all poison (the kernel did not store it), poison but its last byte (stored), or
    // random bytes (stored).
    std::vector<uint8_t> data(static_cast<size_t>(kElems * eb)), want_unwritten(static_cast<size_t>(kElems));
    for (int32_t e = 0; e < kElems; ++e) {
      const int32_t kind = pick(0, 2, rng);
      want_unwritten[static_cast<size_t>(e)] = kind == 0 ? 1 : 0;
      for (int32_t b = 0; b < eb; ++b) {
        auto x = static_cast<uint8_t>(rng());
        if (x == kPoisonByte) x ^= 1;
        data[static_cast<size_t>(e * eb + b)] = kind == 0 || (kind == 1 && b < eb - 1) ? kPoisonByte : x;
      }
    }
    const std::vector<uint8_t> saved = uniform<uint8_t>(kElems * eb, 0, 255, rng);
    Dual<uint8_t> d_data(data), d_saved(saved), unwritten(filled<uint8_t>(kElems, 7));
    for (bool gpu : {false, true})
      run(RestoreUnwrittenKernel{eb, d_data.on(gpu), d_saved.on(gpu), unwritten.on(gpu)}, kElems, gpu);
    expect_same(d_data, "data");
    expect_same(unwritten, "unwritten");
    // Not vacuous: exactly the all-poison elements read as unwritten and got their saved bytes back.
    EXPECT_EQ(unwritten.host, want_unwritten);
    for (int32_t i = 0; i < kElems * eb; ++i) {
      const auto u = static_cast<size_t>(i);
      EXPECT_EQ(d_data.host[u], want_unwritten[u / static_cast<size_t>(eb)] != 0 ? saved[u] : data[u]) << i;
    }
  }
}

TEST(GpuEngineKernels, WriteCheckBandsSaveAndRestoreTheSameBytesAsTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(29);
  constexpr int32_t kElems = 23;
  constexpr int32_t kWidths[kCheckBandsMax] = {4, 8, 1};  // ids, positions, flags
  std::vector<std::unique_ptr<Dual<uint8_t>>> data, saved, unwritten;
  for (int32_t w : kWidths) {
    std::vector<uint8_t> bytes = uniform<uint8_t>(kElems * w, 0, 255, rng);
    for (auto& x : bytes)
      if (x == kPoisonByte) x ^= 1;
    data.push_back(std::make_unique<Dual<uint8_t>>(bytes));
    saved.push_back(std::make_unique<Dual<uint8_t>>(filled<uint8_t>(kElems * w, 0)));
    unwritten.push_back(std::make_unique<Dual<uint8_t>>(filled<uint8_t>(kElems, 7)));
  }
  const std::vector<uint8_t> original = data[1]->host;
  for (bool gpu : {false, true}) {
    SaveAndPoisonKernel sp{};
    sp.bands = kCheckBandsMax;
    for (int b = 0; b < kCheckBandsMax; ++b) {
      sp.data[b] = data[static_cast<size_t>(b)]->on(gpu);
      sp.saved[b] = saved[static_cast<size_t>(b)]->on(gpu);
    }
    run(sp, kCheckBandsMax, gpu);
    // A kernel between the two stores every third element of every range.
    RestoreUnwrittenBandsKernel rb{};
    rb.bands = kCheckBandsMax;
    rb.elements = kElems;
    for (int b = 0; b < kCheckBandsMax; ++b) {
      auto& d = *data[static_cast<size_t>(b)];
      // The CPU run's bytes are the host copy; the GPU run's are edited through a copy of their own.
      std::vector<uint8_t> bytes = gpu ? d.from_gpu() : d.host;
      for (int32_t e = 0; e < kElems; e += 3) bytes[static_cast<size_t>(e * kWidths[b])] = static_cast<uint8_t>(e);
      if (gpu) {
        ASSERT_EQ(cudaMemcpy(d.dev, bytes.data(), d.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      } else {
        d.host = bytes;
      }
      rb.band[b] = RestoreUnwrittenKernel{kWidths[b], d.on(gpu), saved[static_cast<size_t>(b)]->on(gpu),
                                          unwritten[static_cast<size_t>(b)]->on(gpu)};
    }
    run(rb, int64_t{kCheckBandsMax} * kElems, gpu);
  }
  for (int b = 0; b < kCheckBandsMax; ++b) {
    expect_same(*saved[static_cast<size_t>(b)], "saved");
    expect_same(*data[static_cast<size_t>(b)], "data");
    expect_same(*unwritten[static_cast<size_t>(b)], "unwritten");
    for (int32_t e = 0; e < kElems; ++e)
      EXPECT_EQ(unwritten[static_cast<size_t>(b)]->host[static_cast<size_t>(e)], e % 3 == 0 ? 0 : 1);
  }
  // Not vacuous: the unstored elements of the 8-byte range hold their original bytes again.
  for (int32_t e = 1; e < kElems; e += 3)
    for (int32_t i = 0; i < 8; ++i)
      EXPECT_EQ(data[1]->host[static_cast<size_t>(e * 8 + i)], original[static_cast<size_t>(e * 8 + i)]);
}

// The recurrent layer (kernels/recurrent.h): three requests' blocks side by side (a prefill chunk
// longer than the window, two verification blocks) and padded rows; then the commit at an accepted
// length per request and the reset of an admitted one.
TEST(GpuEngineKernels, RecurrentLayerCommitAndResetMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(27);
  constexpr int32_t D = 8, lanes = 4, window = K + 1;
  const std::vector<int32_t> req{5, 5, 5, 5, 5, 5, 2, 2, 2, 2, 7, 7, -1, -1};
  const std::vector<int64_t> pos{3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 20, 21, 0, 0};
  const auto rows = static_cast<int64_t>(req.size());
  Dual<int32_t> row_req(req);
  Dual<int64_t> positions(pos);
  Dual<uint32_t> y(uniform<uint32_t>(rows * D, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> v(uniform<uint32_t>(D, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> a(uniform<uint32_t>(D, 0, 1 << 30, rng)), b(uniform<uint32_t>(D, 0, 1 << 30, rng));
  Dual<uint32_t> state(uniform<uint32_t>(kMaxReqs * lanes, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> scratch(filled<uint32_t>(kMaxReqs * window * lanes, 7)), x(filled<uint32_t>(rows * lanes, 9));
  // Accepted lengths inside each block's last `window` positions (request 5: the chunk's last row).
  std::vector<int32_t> computed = filled<int32_t>(kMaxReqs, 0);
  computed[5] = 9;
  computed[2] = 12;
  computed[7] = 22;
  Dual<int32_t> idx(std::vector<int32_t>{5, 2, -1, 7}), num_computed(computed), admitted(std::vector<int32_t>{3});
  for (bool gpu : {false, true}) {
    run(RecurrentLayerKernel{row_req.on(gpu), positions.on(gpu), y.on(gpu), v.on(gpu), a.on(gpu), b.on(gpu),
                             state.on(gpu), D, 4, lanes, window, rows, scratch.on(gpu), x.on(gpu)},
        rows, gpu);
    run(RecurrentCommitKernel{idx.on(gpu), num_computed.on(gpu), scratch.on(gpu), window, lanes, state.on(gpu)}, 4,
        gpu);
    run(RecurrentResetKernel{admitted.on(gpu), lanes, state.on(gpu)}, 1, gpu);
  }
  expect_same(x, "layer output");
  expect_same(scratch, "scratch");
  expect_same(state, "committed state");
  EXPECT_EQ(x.host[12 * lanes], 0U);  // a padded row
}
TEST(GpuEngineKernels, EagleTapsAndForwardsMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(28);
  constexpr int32_t D = 8, lanes = 4, taps = 3, drafted = 3, kVocab = 64;
  const std::vector<int32_t> req{5, 5, 5, 2, 2, 7, -1, -1};
  const auto rows = static_cast<int64_t>(req.size());
  Dual<int32_t> row_req(req);
  Dual<uint32_t> c(uniform<uint32_t>(rows, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> x(uniform<uint32_t>(rows * lanes, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> w(uniform<uint32_t>(D, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> tap0(filled<uint32_t>(rows * kTapWords, 3)), tap1(filled<uint32_t>(rows * kTapWords, 3)),
      tap2(filled<uint32_t>(rows * kTapWords, 3));
  Dual<uint32_t>* tap[taps] = {&tap0, &tap1, &tap2};
  Dual<int32_t> anchor(std::vector<int32_t>{2, 4, 5});
  Dual<int32_t> ids(uniform<int32_t>(drafted * K, 0, kVocab - 1, rng));
  Dual<int64_t> pos(uniform<int64_t>(drafted * K, 0, 100, rng));
  Dual<uint32_t> table(uniform<uint32_t>(kVocab, 0, std::numeric_limits<uint32_t>::max(), rng));
  Dual<uint32_t> state(filled<uint32_t>(drafted * 2, 1));
  Dual<int64_t> cursor(filled<int64_t>(drafted * 2, 1)), drafts(filled<int64_t>(drafted * K, -1));
  for (bool gpu : {false, true}) {
    for (int t = 0; t < taps; ++t)
      run(TapKernel{row_req.on(gpu), c.on(gpu), x.on(gpu), w.on(gpu), t /* a shard per tap */, lanes, t == 0,
                    tap[t]->on(gpu)},
          rows, gpu);
    EagleStepKernel k{};
    k.k = K;
    k.num_taps = taps;
    for (int t = 0; t < taps; ++t) k.taps[t] = tap[t]->on(gpu);
    k.anchor_row = anchor.on(gpu);
    k.input_ids = ids.on(gpu);
    k.positions = pos.on(gpu);
    k.draft_embed = table.on(gpu);
    k.r_pow = 0x9E3779B1U;
    k.vocab = kVocab;
    k.state = state.on(gpu);
    k.cursor = cursor.on(gpu);
    k.drafts = drafts.on(gpu);
    for (k.pass = 0; k.pass < K; ++k.pass) run(k, drafted, gpu);
  }
  for (int t = 0; t < taps; ++t) expect_same(*tap[t], "tap");
  expect_same(drafts, "drafts");
  expect_same(state, "fused state");
  EXPECT_EQ(tap1.host[0], 0U);  // only the first TP rank's part carries the context lane
}

TEST(GpuEngineKernels, ExpertParallelDispatchExpertsAndCombineMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  Rng rng(31);
  constexpr int32_t kRows = 24, kTop = 2, kDp = 2, E = 8;
  const int32_t entries = kDp * kRows * kTop;
  Dual<int32_t> topk_ids(uniform<int32_t>(kRows * kTop, -1, E - 1, rng));
  Dual<float> weights(random_floats(kRows * kTop, 0.0f, 2.0f, rng)), scale(random_floats(E, -3.0f, 3.0f, rng));
  Dual<int32_t> send_ids(filled<int32_t>(entries, -99));
  Dual<float> send_weights(filled<float>(entries, -99.0f));
  Dual<int32_t> partial(filled<int32_t>(kDp * kRows, -99));
  Dual<float> confidence(filled<float>(kRows, -99.0f));
  Dual<int32_t> dummy_ids(filled<int32_t>(kRows, -99));
  Dual<int64_t> dummy_positions(filled<int64_t>(kRows, -99));
  Dual<uint8_t> dummy_padding(filled<uint8_t>(kRows, 0xA5));
  for (bool gpu : {false, true}) {
    run(DummyQueryRowsKernel{dummy_ids.on(gpu), dummy_positions.on(gpu), bools(dummy_padding, gpu)}, kRows, gpu);
    run(EpDispatchPackKernel{kRows, kTop, kDp, topk_ids.on(gpu), weights.on(gpu), send_ids.on(gpu),
                             send_weights.on(gpu)},
        kRows, gpu);
    // One replica's view, the all-to-all left out: what it sent stands for what it received.
    run(EpExpertsKernel{kTop, send_ids.on(gpu), send_weights.on(gpu), scale.on(gpu), partial.on(gpu)}, kDp * kRows,
        gpu);
    run(EpCombineKernel{kRows, kDp, partial.on(gpu), confidence.on(gpu)}, kRows, gpu);
  }
  expect_same(send_ids, "dispatched expert ids");
  expect_same(send_weights, "dispatched weights");
  expect_same(partial, "experts' fixed-point outputs");
  expect_same(confidence, "combined confidence");
  expect_same(dummy_ids, "dummy query ids");
  expect_same(dummy_positions, "dummy query positions");
  expect_same(dummy_padding, "dummy query rows' padding flags");
  EXPECT_TRUE(std::none_of(confidence.host.begin(), confidence.host.end(), [](float x) { return x == -99.0f; }));
}
}  // namespace
}  // namespace ppspec::kernels
