#include "engine/rank_context.h"

#include <algorithm>
#include <utility>

namespace ppspec::engine {

RankContext::RankContext(core::Runtime& runtime, core::RankId r, const EngineConfig& config,
                         const Checkpoint& checkpoint, std::string outputs_channel)
    : rt(runtime), dev(runtime.device(r)), cfg(config), ckpt(checkpoint), rank(r), outputs(std::move(outputs_channel)) {
  const Topology& t = cfg.topology;
  stage = t.stage_of(rank);
  tp_rank = t.tp_rank_of(rank);
  pp = t.pp;
  tp = t.tp;
  dp = t.dp;
  replica = t.replica_of(rank);
  k = cfg.spec.k;
  first = stage == 0;
  last = stage == pp - 1;
  lane_count = cfg.model.lanes / tp;
  lane_begin = tp_rank * lane_count;
  max_reqs = cfg.serving.max_num_seqs;
  max_rows = cfg.max_rows();
  max_blocks = cfg.max_blocks_per_req();
  const int blocks = cfg.model.num_blocks > 0 ? cfg.model.num_blocks : 0;
  num_slots = static_cast<int64_t>(std::max(blocks, max_reqs * max_blocks + 1)) * cfg.model.block_size;
  main = dev.stream("main");
  side = dev.stream("side");
}

core::Buffer RankContext::alloc(core::Dtype d, int64_t rows, int64_t cols, const char* name) {
  core::Buffer b = dev.alloc(d, core::Shape{rows, cols}, name);
  allocated.push_back(b);
  return b;
}

int64_t RankContext::draft_query_rows() const {
  return std::max<int64_t>(static_cast<int64_t>(max_reqs) * k,
                           cfg.serving.capture_sizes.empty() ? 0 : cfg.serving.capture_sizes.back());
}

}  // namespace ppspec::engine
