// One simulated world's configuration: what its scenario states (core::WorldConfig) and what the
// run chooses beyond it.
#pragma once

#include <cstdint>

#include "core/world_config.h"

namespace ppspec::sim {

using core::CostModel;
using core::Time;

// Work items a stream holds before a host call that adds one blocks, as a CUDA launch blocks when
// the device's command queue is full: a host that posts forever without synchronising waits
// instead of growing the simulator's memory without bound.
inline constexpr uint64_t kStreamQueueMax = 1024;

struct SimConfig : core::WorldConfig {
  bool record_decisions = true;  // keep the schedule for replay
  // Device memory: backed by host bytes (data and a shadow byte each) where the run reads data back
  // (serving); by size only otherwise (program scenarios), so a 32 GiB all-reduce costs nothing.
  bool backed_memory = true;
};

// The simulator's configuration of a world as its scenario states it.
inline SimConfig sim_config(const core::WorldConfig& world) {
  SimConfig c;
  static_cast<core::WorldConfig&>(c) = world;
  return c;
}

}  // namespace ppspec::sim
