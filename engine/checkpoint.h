// The seeded "checkpoint": every weight of the toy model and the drafter. Each stage loads its part
// (stage 0 the embeddings, each stage its layers, the last stage the head and the drafter), as a
// real checkpoint loader would; the drafter's embedding is its own copy of the target's.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/config.h"
#include "kernels/toy_model.h"

namespace ppspec::engine {

struct LayerWeights {
  std::vector<uint32_t> w, u, v;  // [D] each
  // A recurrent layer's state transition s' = s * a + mix(y ^ v) * b, lane-wise ([D] each, odd: the
  // state never forgets a token); empty for an attention layer.
  std::vector<uint32_t> a, b;
};

struct Checkpoint {
  kernels::ToyConsts consts;
  std::vector<uint32_t> embed_ctx;    // [V]: the target's context-lane embedding
  std::vector<uint32_t> embed_deep;   // [V, D]
  std::vector<LayerWeights> layers;   // [L]
  std::vector<uint32_t> head;         // [D]
  std::vector<uint32_t> draft_embed;  // [V]: "embed.weight" of the drafter (equal to embed_ctx)
  std::vector<float> router_bias;     // [experts]
  std::vector<float> expert_scale;    // [experts]
  // [L, D]: per layer, the weights an EAGLE tap digests the layer's output lanes with (the drafter's
  // fc layer over the tapped hidden states, kernels/eagle.h).
  std::vector<uint32_t> tap_weights;
};

Checkpoint make_checkpoint(const ModelConfig& m);

// Which layers a stage holds: [first, last).
struct LayerRange {
  int first = 0;
  int last = 0;
};
LayerRange stage_layers(const ModelConfig& m, int pp, int stage);

}  // namespace ppspec::engine
