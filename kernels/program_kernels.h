// The GPU kernels of program scenarios (real backend): kernels that keep the GPU busy for a given
// time, one per slot so that each distinct (kernel, specialization) of a scenario is its own CUDA
// function (loaded on first launch under lazy loading), and the persistent flag-waiting kernel.
#pragma once

#include <cstdint>

namespace ppspec::kernels {

inline constexpr int kBusySlots = 64;

// cudaStream_t is passed as void* so that C++ code without CUDA headers can hold it.
void launch_busy(int slot, uint64_t nanoseconds, void* stream);
// The address of slot's kernel, for cudaFuncGetAttributes (which loads it: a preload).
const void* busy_kernel_address(int slot);
void launch_wait_flag(volatile int* flag, void* stream);

// CUDA C++ source of a busy kernel named `ppspec_jit_busy`, compiled at run time by NVRTC.
extern const char* const kJitBusySource;

}  // namespace ppspec::kernels
