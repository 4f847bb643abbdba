#include "verify/oracles/golden.h"

#include "core/assert.h"
#include "engine/detokenizer.h"
#include "kernels/recurrent.h"
#include "kernels/row.h"

namespace ppspec::verify {

ReferenceSequence::ReferenceSequence(const engine::Checkpoint& ckpt, const engine::ModelConfig& m)
    : ckpt_(ckpt), model_(m) {}

void ReferenceSequence::set(size_t pos, int32_t token) {
  PPSPEC_ASSERT(pos <= tokens_.size(), "position {} set past the sequence's end {}", pos, tokens_.size());
  PPSPEC_ASSERT(token >= 0 && token < model_.vocab, "token {} outside the vocabulary of {}", token, model_.vocab);
  if (pos == tokens_.size()) {
    tokens_.push_back(token);
    return;
  }
  if (tokens_[pos] == token) return;
  tokens_[pos] = token;
  computed_ = std::min(computed_, pos);
}

void ReferenceSequence::truncate(size_t n) {
  if (n >= tokens_.size()) return;
  tokens_.resize(n);
  computed_ = std::min(computed_, n);
}

uint32_t ReferenceSequence::context(size_t pos) {
  compute_to(pos);
  return context_[pos];
}

std::span<const uint32_t> ReferenceSequence::lanes(size_t pos, int layers) {
  PPSPEC_ASSERT(layers >= 0 && layers <= model_.layers, "{} layers of {}", layers, model_.layers);
  compute_to(pos);
  const auto D = static_cast<size_t>(model_.lanes);
  const size_t per_pos = static_cast<size_t>(model_.layers + 1) * D;
  return std::span<const uint32_t>(lanes_).subspan(pos * per_pos + static_cast<size_t>(layers) * D, D);
}

int64_t ReferenceSequence::greedy(size_t pos) {
  const auto x = lanes(pos, model_.layers);
  uint32_t h = 0;
  for (size_t j = 0; j < x.size(); ++j) h += x[j] * ckpt_.head[j];
  return kernels::greedy_token(context_[pos], h, model_.vocab, ckpt_.consts.accept_1024);
}

void ReferenceSequence::compute_to(size_t pos) {
  PPSPEC_ASSERT(pos < tokens_.size(), "position {} of a sequence of {}", pos, tokens_.size());
  while (computed_ <= pos) compute(computed_++);
}

// One position, given every earlier one: the model's definition (kernels/toy_model.h computes the
// same per row, over a paged KV cache and a TP shard of the lanes).
void ReferenceSequence::compute(size_t p) {
  using kernels::mix32;
  const auto D = static_cast<size_t>(model_.lanes);
  const auto L = static_cast<size_t>(model_.layers);
  context_.resize(p + 1);
  kv_sum_.resize((p + 1) * L * D);
  lanes_.resize((p + 1) * (L + 1) * D);
  const auto tok = static_cast<size_t>(tokens_[p]);
  const uint32_t ctx_kv = ckpt_.embed_ctx[tok] * kernels::pow32(ckpt_.consts.r, p);
  context_[p] = (p > 0 ? context_[p - 1] : 0U) + ctx_kv;
  uint32_t* x = &lanes_[p * (L + 1) * D];
  for (size_t j = 0; j < D; ++j) x[j] = ckpt_.embed_deep[tok * D + j] ^ mix32(static_cast<uint32_t>(p) + 1U);
  std::vector<uint32_t> y(D);
  for (size_t l = 0; l < L; ++l) {
    const engine::LayerWeights& w = ckpt_.layers[l];
    std::fill(y.begin(), y.end(), 0U);
    for (size_t j = 0; j < D; ++j) {
      const uint32_t xj = x[j];
      y[j] += xj * w.w[j];
      const size_t prev = (j + D - 1) % D;
      y[prev] += ((xj << 7) | (xj >> 25)) * w.u[prev];
    }
    uint32_t* sum = &kv_sum_[(p * L + l) * D];
    const uint32_t* before = p > 0 ? &kv_sum_[((p - 1) * L + l) * D] : nullptr;
    uint32_t* out = x + D;
    // An attention layer's running KV sum; a recurrent layer's state (kernels/recurrent.h), kept
    // over the positions of the sequence only: the rolled-back state a correct engine commits.
    const bool recurrent = !w.a.empty();
    for (size_t j = 0; j < D; ++j) {
      const uint32_t prior = before != nullptr ? before[j] : 0U;
      sum[j] = recurrent ? kernels::recurrent_step(prior, y[j], w.v[j], w.a[j], w.b[j]) : prior + mix32(y[j] ^ w.v[j]);
      out[j] = mix32(y[j] + sum[j]);
    }
    x = out;
  }
}

StopCut stop_cut(const engine::ModelConfig& m, std::span<const std::string> stop, bool include_in_output,
                 std::span<const int64_t> tokens) {
  StopCut cut;
  for (const int64_t t : tokens) {
    engine::append_token_text(m, t, cut.text);
    ++cut.tokens;
    size_t best_end = std::string::npos, best_at = 0;
    for (size_t i = 0; i < stop.size(); ++i) {
      const size_t at = cut.text.find(stop[i]);
      if (at == std::string::npos || (best_end != std::string::npos && at + stop[i].size() >= best_end)) continue;
      best_end = at + stop[i].size(), best_at = at;
      cut.stop = static_cast<int32_t>(i);
    }
    if (cut.stop < 0) continue;
    cut.text.resize(include_in_output ? best_end : best_at);
    return cut;
  }
  return cut;
}

std::vector<int64_t> golden_continuation(const engine::Checkpoint& ckpt, const engine::ModelConfig& m,
                                         const std::vector<int32_t>& prompt, int max_tokens) {
  ReferenceSequence seq(ckpt, m);
  for (int32_t t : prompt) seq.set(seq.size(), t);
  std::vector<int64_t> out;
  // The token after the last position is the next output.
  while (out.size() < static_cast<size_t>(max_tokens)) {
    const int64_t next = seq.greedy(seq.size() - 1);
    out.push_back(next);
    if (next == m.stop_token) break;
    seq.set(seq.size(), static_cast<int32_t>(next));
  }
  return out;
}

}  // namespace ppspec::verify
