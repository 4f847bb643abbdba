// Every engine kernel goes to the runtime with both of its launchers: the CPU launcher the
// simulator runs when the kernel executes on its stream, and the CUDA launcher the real backend
// enqueues (kernels/cuda_launch.h). The engine itself never touches device memory.
#pragma once

#include <cstdint>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/device_fault.h"
#include "core/runtime.h"
#include "kernels/cuda_launch.h"
#include "kernels/launch.h"

namespace ppspec::engine {

// `ref`'s strings must outlive the run (launches keep views of them).
template <typename K>
void launch_kernel(core::Device& dev, core::Stream s, core::KernelRef ref, const K& k, int64_t rows) {
  PPSPEC_ASSERT(rows >= 0, "kernel {} launched over {} rows", ref.name, rows);
  core::KernelLaunch l;
  l.kernel = ref;
  l.work = rows;
  // A kernel that indexes past a buffer is a device fault naming it and its row (on a GPU the same
  // access traps: an illegal memory access); the runtime turns it into the run's verdict.
  l.body = [k, rows, name = ref.name, rank = dev.rank()] {
    for (int64_t r = 0; r < rows; ++r) {
      try {
        k.row(r);
      } catch (const kernels::KernelOutOfBounds& e) {
        throw core::DeviceFault(rank, std::string(name), r, e.what());
      }
    }
  };
  l.device_body = [k, rows](void* stream) { kernels::cuda::launch(k, rows, stream); };
  dev.launch(s, l);
}

// Loads a kernel's module at warmup, on either runtime.
template <typename K>
void preload_kernel(core::Device& dev, core::KernelRef ref) {
  dev.preload(ref, [] { kernels::cuda::preload(K{}); });
}

}  // namespace ppspec::engine
