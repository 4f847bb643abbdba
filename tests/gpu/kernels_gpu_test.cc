// The engine's kernels on a GPU give the same bits as on the CPU (DESIGN §5): the toy model's
// forward over a paged cache with padded rows, the rejection sampler (greedy and temperature), and
// the router (ids exact; its float weights within a few ulp, the one place expf/log1pf may differ).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_launch.h"
#include "tests/gpu/dual_buffer.h"
#include "kernels/launch.h"

namespace ppspec::kernels {
namespace {

// A batch's rows: runs of a request's positions, then padding (no request, the padding slot).
// Request r owns blocks 1 + 4r .. 4 + 4r of its `max_blocks`.
struct PaddedRows {
  int32_t max_blocks, block_size;
  std::vector<int32_t> req, ids;
  std::vector<int64_t> pos, slots;
  std::vector<int32_t> blocks;
  int32_t used = 0;  // rows before the padding

  PaddedRows(int32_t rows, int32_t reqs, int32_t max_blocks_per_req, int32_t block)
      : max_blocks(max_blocks_per_req),
        block_size(block),
        req(static_cast<size_t>(rows), -1),
        ids(static_cast<size_t>(rows), 0),
        pos(static_cast<size_t>(rows), 0),
        slots(static_cast<size_t>(rows), kPadSlot),
        blocks(static_cast<size_t>(reqs * max_blocks_per_req), 0) {
    for (int r = 0; r < reqs; ++r)
      for (int b = 0; b < 4; ++b) blocks[static_cast<size_t>(r * max_blocks_per_req + b)] = 1 + r * 4 + b;
  }

  // `n` rows of request `request` from position `first`, each with a random token below `vocab`.
  void add(int32_t request, int64_t first, int n, int32_t vocab, std::mt19937_64& rng) {
    for (int i = 0; i < n; ++i, ++used) {
      const auto row = static_cast<size_t>(used);
      req[row] = request;
      pos[row] = first + i;
      ids[row] = static_cast<int32_t>(rng() % vocab);
      slots[row] =
          slot_of(Span<const int32_t>(blocks).sub(request * max_blocks, max_blocks), max_blocks, block_size, first + i);
    }
  }
};

TEST(GpuKernels, ToyModelForwardAndSamplerAreBitIdenticalToTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(7);
  constexpr int32_t V = 512, D = 8, kBlock = 4, kMaxBlocks = 8, kReqs = 3, kRows = 24, K = 3;
  constexpr int64_t kSlots = 40 * kBlock;
  // Three requests: a 7-token prefill, a decode block of 1 + K at positions 10..13 (its earlier
  // positions already in the cache), two prefill rows at 4..5; then padding rows.
  PaddedRows rows(kRows, kReqs, kMaxBlocks, kBlock);
  rows.add(0, 0, 7, V, rng);
  rows.add(1, 10, 1 + K, V, rng);
  rows.add(2, 4, 2, V, rng);
  const int32_t real_rows = rows.used;

  Dual<int32_t> d_ids(rows.ids), d_req(rows.req), d_blocks(rows.blocks);
  Dual<int64_t> d_pos(rows.pos), d_slots(rows.slots);
  Dual<uint32_t> embed_ctx(random_words(V, rng)), embed_deep(random_words(V * D, rng));
  Dual<uint32_t> w(random_words(D, rng)), u(random_words(D, rng));
  Dual<uint32_t> v(random_words(D, rng)), head(random_words(D, rng));
  // Caches hold earlier positions' values (and garbage elsewhere): the forward must read only its own.
  Dual<uint32_t> ctx_kv(random_words(kSlots, rng)), kv(random_words(kSlots * D, rng));
  Dual<uint32_t> x(std::vector<uint32_t>(kRows * D, 0xDEADBEEF)), y(std::vector<uint32_t>(kRows * D, 0xDEADBEEF));
  Dual<uint32_t> c(std::vector<uint32_t>(kRows, 0xDEADBEEF)), h(std::vector<uint32_t>(kRows, 0xDEADBEEF));
  Dual<int64_t> greedy(std::vector<int64_t>(kRows, -7));
  // Sampler: request 0 samples from its last row, 1 verifies K drafts, 2 is a non-final chunk.
  Dual<int32_t> logit_start(std::vector<int32_t>{6, 7, 11}), num_logits(std::vector<int32_t>{1, 1 + K, 0});
  Dual<int64_t> seeds(std::vector<int64_t>{11, 12, 13}), out_index(std::vector<int64_t>{0, 5, 0});
  Dual<int64_t> sampled(std::vector<int64_t>(kReqs * (K + 1), -9));
  Dual<int32_t> num_sampled(std::vector<int32_t>(kReqs, -9)), num_rejected(std::vector<int32_t>(kReqs, -9));

  for (uint32_t spread : {0U, 16U}) {
    Dual<uint32_t> d_spread(std::vector<uint32_t>(kReqs, spread));
    for (bool gpu : {false, true}) {
      const RowInputs in{d_ids.on(gpu),    d_pos.on(gpu), d_slots.on(gpu), d_req.on(gpu),
                         d_blocks.on(gpu), kMaxBlocks,    kBlock};
      run(EmbedKernel{in, embed_ctx.on(gpu), embed_deep.on(gpu), D, 0, D, 0x9E3779B1U, ctx_kv.on(gpu), x.on(gpu)},
          kRows, gpu);
      run(ContextSumKernel{in, ctx_kv.on(gpu), c.on(gpu)}, kRows, gpu);
      for (int layer = 0; layer < 2; ++layer) {
        run(LayerPartialKernel{d_req.on(gpu), x.on(gpu), w.on(gpu), u.on(gpu), D, 0, D, y.on(gpu)}, kRows, gpu);
        run(LayerKvWriteKernel{in, y.on(gpu), v.on(gpu), D, 0, D, kv.on(gpu)}, kRows, gpu);
        run(LayerOutKernel{in, y.on(gpu), kv.on(gpu), D, 0, D, x.on(gpu)}, kRows, gpu);
      }
      run(HeadPartialKernel{d_req.on(gpu), x.on(gpu), head.on(gpu), 0, D, h.on(gpu)}, kRows, gpu);
      run(LogitsKernel{d_req.on(gpu), c.on(gpu), h.on(gpu), V, 717, greedy.on(gpu)}, kRows, gpu);
      run(RejectionSampleKernel{logit_start.on(gpu), num_logits.on(gpu), d_ids.on(gpu), greedy.on(gpu), h.on(gpu),
                                seeds.on(gpu), out_index.on(gpu), d_spread.on(gpu), V, K + 1, sampled.on(gpu),
                                num_sampled.on(gpu), num_rejected.on(gpu)},
          kReqs, gpu);
    }
    EXPECT_EQ(ctx_kv.host, ctx_kv.from_gpu());
    EXPECT_EQ(kv.host, kv.from_gpu());
    EXPECT_EQ(c.host, c.from_gpu());
    EXPECT_EQ(x.host, x.from_gpu());
    EXPECT_EQ(h.host, h.from_gpu());
    EXPECT_EQ(greedy.host, greedy.from_gpu()) << "spread " << spread;
    EXPECT_EQ(sampled.host, sampled.from_gpu()) << "spread " << spread;
    EXPECT_EQ(num_sampled.host, num_sampled.from_gpu());
    EXPECT_EQ(num_rejected.host, num_rejected.from_gpu());
    // The run is not vacuous: real rows got tokens, padded rows none, request 0 sampled one.
    for (int32_t i = 0; i < kRows; ++i) EXPECT_EQ(greedy.host[static_cast<size_t>(i)] >= 0, i < real_rows) << i;
    EXPECT_EQ(num_sampled.host[0], 1);
    EXPECT_EQ(num_sampled.host[2], 0);
  }
}

TEST(GpuKernels, RouterIdsMatchTheCpuAndWeightsWithinFourUlp) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> gate(-6.0f, 6.0f);
  constexpr int32_t kRows = 64, E = 8, TopK = 2;
  std::vector<float> gating(kRows * E);
  for (auto& g : gating) g = gate(rng);
  std::vector<uint8_t> padding(kRows, 0);
  for (int32_t r = 48; r < kRows; ++r) {
    padding[static_cast<size_t>(r)] = 1;
    for (int e = 0; e < E; ++e) gating[static_cast<size_t>(r * E + e)] = NAN;
  }
  Dual<float> d_gating(gating), bias(std::vector<float>{0.1f, -0.2f, 0.0f, 0.3f, -0.1f, 0.05f, 0.0f, -0.3f});
  Dual<uint8_t> d_padding(padding);
  Dual<int32_t> ids(std::vector<int32_t>(kRows * TopK, 99));
  Dual<float> weights(std::vector<float>(kRows * TopK, 99.0f));
  for (bool gpu : {false, true})
    run(TopkSoftplusSqrtKernel{d_gating.on(gpu), bias.on(gpu),
                               Span<const bool>(reinterpret_cast<const bool*>(d_padding.on(gpu).data), kRows), E, TopK,
                               true, 2.5f, true, ids.on(gpu), weights.on(gpu)},
        kRows, gpu);
  EXPECT_EQ(ids.host, ids.from_gpu());
  const std::vector<float> gw = weights.from_gpu();
  int64_t worst = 0;
  for (size_t i = 0; i < gw.size(); ++i) {
    int32_t a = 0, b = 0;
    std::memcpy(&a, &weights.host[i], 4);
    std::memcpy(&b, &gw[i], 4);
    worst = std::max<int64_t>(worst, std::abs(static_cast<int64_t>(a) - b));
  }
  EXPECT_LE(worst, 4) << "largest weight difference in ulp";
  RecordProperty("router_weight_max_ulp", static_cast<int>(worst));
  std::printf("router weights: largest CPU/GPU difference %lld ulp\n", static_cast<long long>(worst));
  for (int32_t r = 48; r < kRows; ++r) EXPECT_EQ(ids.host[static_cast<size_t>(r * TopK)], -1);
}

}  // namespace
}  // namespace ppspec::kernels
