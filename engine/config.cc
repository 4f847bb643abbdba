#include "engine/config.h"

#include <algorithm>

namespace ppspec::engine {

int EngineConfig::max_rows() const {
  int rows = serving.max_num_batched_tokens;
  if (!serving.capture_sizes.empty()) rows = std::max(rows, serving.capture_sizes.back());
  return rows;
}

}  // namespace ppspec::engine
