#include "engine/checkpoint.h"

#include <cmath>

#include "core/rng.h"

namespace ppspec::engine {

Checkpoint make_checkpoint(const ModelConfig& m) {
  core::Rng rng(core::derive_seed(m.checkpoint_seed, 11));
  auto u32 = [&rng] { return static_cast<uint32_t>(rng.next() >> 32); };
  Checkpoint c;
  c.consts.vocab = m.vocab;
  c.consts.lanes = m.lanes;
  c.consts.block_size = m.block_size;
  c.consts.accept_1024 = static_cast<uint32_t>(std::lround(m.alpha * 1024.0));
  c.embed_ctx.resize(static_cast<size_t>(m.vocab));
  for (auto& x : c.embed_ctx) x = u32() | 1U;  // odd: a token never contributes zero
  c.embed_deep.resize(static_cast<size_t>(m.vocab) * static_cast<size_t>(m.lanes));
  for (auto& x : c.embed_deep) x = u32();
  c.layers.resize(static_cast<size_t>(m.layers));
  for (auto& l : c.layers) {
    for (auto* vec : {&l.w, &l.u, &l.v}) {
      vec->resize(static_cast<size_t>(m.lanes));
      for (auto& x : *vec) x = u32() | 1U;
    }
  }
  // From a stream of their own, so that a model without recurrent layers draws every other weight
  // as before.
  core::Rng rec(core::derive_seed(m.checkpoint_seed, 12));
  for (int l : m.recurrent_layers) {
    LayerWeights& lw = c.layers[static_cast<size_t>(l)];
    for (auto* vec : {&lw.a, &lw.b}) {
      vec->resize(static_cast<size_t>(m.lanes));
      for (auto& x : *vec) x = static_cast<uint32_t>(rec.next() >> 32) | 1U;
    }
  }
  c.head.resize(static_cast<size_t>(m.lanes));
  for (auto& x : c.head) x = u32() | 1U;
  c.draft_embed = c.embed_ctx;
  c.router_bias.resize(static_cast<size_t>(m.experts));
  c.expert_scale.resize(static_cast<size_t>(m.experts));
  for (int e = 0; e < m.experts; ++e) {
    c.router_bias[static_cast<size_t>(e)] = static_cast<float>(static_cast<int>(u32() % 200) - 100) / 1000.0f;
    c.expert_scale[static_cast<size_t>(e)] = static_cast<float>(u32() % 1000) / 1000.0f;
  }
  // Their own stream too: a checkpoint without EAGLE taps draws everything else as before.
  core::Rng taps(core::derive_seed(m.checkpoint_seed, 13));
  c.tap_weights.resize(static_cast<size_t>(m.layers) * static_cast<size_t>(m.lanes));
  for (auto& x : c.tap_weights) x = static_cast<uint32_t>(taps.next() >> 32) | 1U;
  return c;
}

LayerRange stage_layers(const ModelConfig& m, int pp, int stage) {
  // As vLLM partitions: the first stages take the extra layers.
  const int base = m.layers / pp;
  const int extra = m.layers % pp;
  const int first = stage * base + std::min(stage, extra);
  return LayerRange{first, first + base + (stage < extra ? 1 : 0)};
}

}  // namespace ppspec::engine
