// What the GPU kernel tests share: whether there is a GPU, and a buffer with a host copy (the CPU
// run's) and a device copy (the GPU run's), equal at the start.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/span.h"

namespace ppspec::kernels {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <class T>
struct Dual {
  std::vector<T> host;
  T* dev = nullptr;
  explicit Dual(std::vector<T> v) : host(std::move(v)) {
    EXPECT_EQ(cudaMalloc(&dev, bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(dev, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  Dual(const Dual&) = delete;
  Dual& operator=(const Dual&) = delete;
  ~Dual() { cudaFree(dev); }
  size_t bytes() const { return host.size() * sizeof(T); }
  Span<T> on(bool gpu) { return Span<T>(gpu ? dev : host.data(), static_cast<int64_t>(host.size())); }
  std::vector<T> from_gpu() const {
    std::vector<T> v(host.size());
    EXPECT_EQ(cudaMemcpy(v.data(), dev, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

}  // namespace ppspec::kernels
