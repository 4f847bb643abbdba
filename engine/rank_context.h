// What every part of one rank's model runner shares (engine/worker.h): its runtime and device, its
// place in the topology, the configuration and checkpoint, the main stream, and the list of what it
// allocated (every buffer starts as poison when the rank's actor starts: kernels/write_check.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/kernel_launch.h"
#include "engine/probe.h"

namespace ppspec::engine {

struct RankContext {
  // `config` is the rank's replica's (engine::replica_config); `outputs` the channel its replica's
  // last stage returns step outputs on.
  RankContext(core::Runtime& runtime, core::RankId r, const EngineConfig& config, const Checkpoint& checkpoint,
              std::string outputs);

  core::Runtime& rt;
  core::Device& dev;
  const EngineConfig& cfg;
  const Checkpoint& ckpt;
  core::RankId rank;
  int stage;
  int tp_rank;
  int pp;
  int tp;
  int dp;
  int replica;
  std::string outputs;
  int k;
  bool first;
  bool last;
  int32_t lane_begin;  // this TP shard's deep lanes
  int32_t lane_count;
  int32_t max_reqs;
  int32_t max_rows;    // rows of a step: the token budget, or the largest graph
  int32_t max_blocks;  // block-table row width
  int64_t num_slots;   // KV slots per layer
  core::Stream main;
  core::Stream side;
  std::vector<core::Buffer> allocated;

  // cudaMalloc, remembered for the poison fill at start.
  core::Buffer alloc(core::Dtype d, int64_t rows, int64_t cols, const char* name);
  // Launches a row kernel on the main stream; `spec` must be a literal (launches keep a view).
  template <typename K>
  void run(const char* name, const char* spec, const K& kernel, int64_t rows) {
    launch_kernel(dev, main, core::KernelRef{name, spec}, kernel, rows);
  }
  template <typename T>
  void upload(const core::Buffer& dst, const std::vector<T>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    dev.upload(main, dst, std::move(bytes));
  }
  bool observed() const { return rt.events().active(); }
  // The drafter's largest query block: every request's K rows, or the largest graph.
  int64_t draft_query_rows() const;
};

}  // namespace ppspec::engine
