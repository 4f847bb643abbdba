// The golden reference: the target model computed with plain loops over one sequence, position by
// position (no batching, no paging, no tensor parallelism, no speculation), from the same
// checkpoint. `golden_continuation` is a request's target-only greedy continuation, which the
// engine's greedy output must equal token for token; `ReferenceSequence` is the model's state over
// any token sequence, every layer kept, for the oracles that compare a stage's activations with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/checkpoint.h"

namespace ppspec::verify {

// The reference model over one token sequence. Each position is computed once, when first asked
// for; setting a different token at a position recomputes from that position on, as a verification
// block's rejected drafts are rewritten the next step. Per position it keeps the context lane, the
// deep lanes after every layer and each layer's running KV sums (a recurrent layer's: its state
// after the position, over the sequence's tokens only): O(layers * lanes) words.
class ReferenceSequence {
 public:
  ReferenceSequence(const engine::Checkpoint& ckpt, const engine::ModelConfig& m);

  // The token at `pos`, pos <= size(): one past the end appends. Precondition: a token of the
  // vocabulary.
  void set(size_t pos, int32_t token);
  // Forgets the positions from `n` on (tokens no stage embeds any more).
  void truncate(size_t n);
  size_t size() const { return tokens_.size(); }
  int32_t token(size_t pos) const { return tokens_.at(pos); }

  // At position `pos` (< size()): the context lane, the deep lanes after the first `layers` layers
  // (0: the embedding), and the target's greedy token for the next position.
  uint32_t context(size_t pos);
  std::span<const uint32_t> lanes(size_t pos, int layers);
  int64_t greedy(size_t pos);

 private:
  void compute_to(size_t pos);
  void compute(size_t pos);

  const engine::Checkpoint& ckpt_;
  const engine::ModelConfig& model_;
  std::vector<int32_t> tokens_;
  size_t computed_ = 0;            // positions computed with the current tokens
  std::vector<uint32_t> context_;  // [pos]: the context lane (Σ of the context KV over 0..pos)
  std::vector<uint32_t> kv_sum_;   // [pos][layer][lane]: Σ of the layer's KV over 0..pos
  std::vector<uint32_t> lanes_;    // [pos][layers + 1][lane]
};

// Where `tokens` end under stop strings, appended one at a time and the whole text searched after
// each (the definition the front end's windowed search must agree with, engine/stop_strings.h):
// the tokens kept (through the one that completes the earliest-ending stop string), the text
// returned, and that stop string's index (-1: none completed).
struct StopCut {
  size_t tokens = 0;
  std::string text;
  int32_t stop = -1;
};
StopCut stop_cut(const engine::ModelConfig& m, std::span<const std::string> stop, bool include_in_output,
                 std::span<const int64_t> tokens);

std::vector<int64_t> golden_continuation(const engine::Checkpoint& ckpt, const engine::ModelConfig& m,
                                         const std::vector<int32_t>& prompt, int max_tokens);

}  // namespace ppspec::verify
