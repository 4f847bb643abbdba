// The golden reference: each request's target-only greedy continuation, computed with plain loops
// over the whole sequence (no batching, no paging, no tensor parallelism, no speculation), from the
// same checkpoint. The engine's greedy output must equal it token for token.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/checkpoint.h"

namespace ppspec::engine {

std::vector<int64_t> golden_continuation(const Checkpoint& ckpt, const ModelConfig& m, const std::vector<int32_t>& prompt,
                                         int max_tokens);

}  // namespace ppspec::engine
