#include "engine/golden.h"

#include "kernels/row.h"

namespace ppspec::engine {

std::vector<int64_t> golden_continuation(const Checkpoint& ckpt, const ModelConfig& m, const std::vector<int32_t>& prompt,
                                         int max_tokens) {
  using kernels::mix32;
  const int D = m.lanes;
  const auto& k = ckpt.consts;
  std::vector<int32_t> tokens = prompt;
  std::vector<uint32_t> ctx_kv;                           // by position
  std::vector<std::vector<uint32_t>> kv(static_cast<size_t>(m.layers));  // [layer][pos * D + j]
  std::vector<int64_t> out;
  // Position p is computed once its token is known; the token after the last position is the output.
  for (size_t p = 0; out.size() < static_cast<size_t>(max_tokens); ++p) {
    const int32_t tok = tokens[p];
    ctx_kv.push_back(ckpt.embed_ctx[static_cast<size_t>(tok)] * kernels::pow32(k.r, p));
    uint32_t c = 0;
    for (uint32_t v : ctx_kv) c += v;
    std::vector<uint32_t> x(static_cast<size_t>(D));
    for (int j = 0; j < D; ++j)
      x[static_cast<size_t>(j)] = ckpt.embed_deep[static_cast<size_t>(tok) * D + j] ^ mix32(static_cast<uint32_t>(p) + 1U);
    for (int l = 0; l < m.layers; ++l) {
      const LayerWeights& w = ckpt.layers[static_cast<size_t>(l)];
      std::vector<uint32_t> y(static_cast<size_t>(D), 0);
      for (int j = 0; j < D; ++j) {
        const uint32_t xj = x[static_cast<size_t>(j)];
        y[static_cast<size_t>(j)] += xj * w.w[static_cast<size_t>(j)];
        const int prev = (j + D - 1) % D;
        y[static_cast<size_t>(prev)] += ((xj << 7) | (xj >> 25)) * w.u[static_cast<size_t>(prev)];
      }
      auto& layer_kv = kv[static_cast<size_t>(l)];
      for (int j = 0; j < D; ++j) layer_kv.push_back(mix32(y[static_cast<size_t>(j)] ^ w.v[static_cast<size_t>(j)]));
      for (int j = 0; j < D; ++j) {
        uint32_t sum = y[static_cast<size_t>(j)];
        for (size_t q = 0; q <= p; ++q) sum += layer_kv[q * static_cast<size_t>(D) + static_cast<size_t>(j)];
        x[static_cast<size_t>(j)] = mix32(sum);
      }
    }
    if (p + 1 < prompt.size()) continue;  // still inside the prompt: the next token is known
    uint32_t h = 0;
    for (int j = 0; j < D; ++j) h += x[static_cast<size_t>(j)] * ckpt.head[static_cast<size_t>(j)];
    const int64_t next = kernels::greedy_token(c, h, m.vocab, k.accept_1024);
    out.push_back(next);
    if (next == m.stop_token) break;
    tokens.push_back(static_cast<int32_t>(next));
  }
  return out;
}

}  // namespace ppspec::engine
