#include "engine/config.h"

#include <algorithm>

#include "core/assert.h"

namespace ppspec::engine {

int EngineConfig::max_rows() const {
  int rows = serving.max_num_batched_tokens;
  if (!serving.capture_sizes.empty()) rows = std::max(rows, serving.capture_sizes.back());
  return rows;
}

int EngineConfig::blocks_needed() const { return serving.max_num_seqs * max_blocks_per_req() + 1; }

bool EngineConfig::may_preempt() const { return model.num_blocks > 0 && model.num_blocks < blocks_needed(); }

EngineConfig replica_config(const EngineConfig& c) {
  PPSPEC_ASSERT(c.topology.dp >= 1 && c.serving.max_num_seqs % c.topology.dp == 0, "max_num_seqs {} over dp = {}",
                c.serving.max_num_seqs, c.topology.dp);
  EngineConfig r = c;
  r.serving.max_num_seqs = c.replica_slots();
  return r;
}

std::vector<int> eagle_taps(const EngineConfig& c) {
  std::vector<int> taps = c.spec.taps;
  if (taps.empty()) taps = {0, c.model.layers / 2, c.model.layers - 1};
  std::sort(taps.begin(), taps.end());
  taps.erase(std::unique(taps.begin(), taps.end()), taps.end());
  return taps;
}

}  // namespace ppspec::engine
