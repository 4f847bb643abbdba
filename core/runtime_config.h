// The runtime rules a scenario's [runtime] chooses that hold on every backend: the simulator
// applies them, and a GPU run sets CUDA and NCCL up from them before CUDA starts. The simulator's
// own rules and costs (sim::SimConfig, which extends this) mean nothing on GPUs, so the GPU path
// reads this part only.
#pragma once

#include "core/types.h"

namespace ppspec::core {

struct RuntimeConfig {
  ModuleLoading module_loading = ModuleLoading::lazy;  // CUDA's default on Linux (CUDA_MODULE_LOADING)
  bool strict = false;                                 // hazards fail the run
  bool runtime_connect = true;                         // NCCL_RUNTIME_CONNECT=1: first contact blocks the host (R1)
  bool operator==(const RuntimeConfig&) const = default;
};

}  // namespace ppspec::core
