// Launching row kernels: the CPU launcher loops over rows (the simulator runs it when the kernel
// executes on its stream); the CUDA launcher maps rows to threads (kernels/*.cu). A kernel is a
// struct with its arguments and `PPSPEC_HD void row(int64_t r) const`.
#pragma once

#include <cstdint>

#include "kernels/row.h"

namespace ppspec::kernels {

template <typename K>
void run_on_cpu(const K& k, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) k.row(r);
}

#if defined(__CUDACC__)
template <typename K>
__global__ void row_kernel(K k, int64_t rows) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) k.row(r);
}

template <typename K>
void run_on_gpu(const K& k, int64_t rows, void* stream) {
  // A kernel's arguments travel by value, within CUDA's classic 4 KiB of parameters (a Span is 48
  // bytes: its host-only memo of checked accesses, kernels/span.h, keeps one layout everywhere).
  static_assert(sizeof(K) <= 4096, "a kernel's arguments exceed 4 KiB");
  if (rows <= 0) return;
  const int threads = 128;
  const auto blocks = static_cast<unsigned>((rows + threads - 1) / threads);
  row_kernel<K><<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(k, rows);
}
#endif

}  // namespace ppspec::kernels
