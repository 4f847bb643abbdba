// What the GPU kernel tests share: whether there is a GPU, a buffer with a host copy (the CPU run's)
// and a device copy (the GPU run's), equal at the start, a kernel run on either, random words.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda_launch.h"
#include "kernels/launch.h"
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

// Runs kernel `k` over `rows` rows on the GPU (checking its launch and its end) or on the CPU.
template <class K>
void run(const K& k, int64_t rows, bool gpu) {
  if (gpu) {
    cuda::launch(k, rows, nullptr);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  } else {
    run_on_cpu(k, rows);
  }
}

inline std::vector<uint32_t> random_words(int64_t n, std::mt19937_64& rng) {
  std::vector<uint32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<uint32_t>(rng());
  return v;
}

}  // namespace ppspec::kernels
