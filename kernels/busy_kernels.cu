// Busy kernels, in a module of their own: under lazy loading none of them is loaded until the
// first launch of one (the persistent flag kernel lives in another module).
#include <cuda_runtime.h>

#include <array>
#include <utility>

#include "kernels/program_kernels.h"

namespace ppspec::kernels {
namespace {

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int Slot>
__global__ void busy_kernel(uint64_t ns) {
  const uint64_t start = globaltimer();
  while (globaltimer() - start < ns) {}
}

using BusyFn = void (*)(uint64_t);

template <int... I>
std::array<BusyFn, sizeof...(I)> make_table(std::integer_sequence<int, I...>) {
  return {&busy_kernel<I>...};
}

const std::array<BusyFn, kBusySlots> kBusy = make_table(std::make_integer_sequence<int, kBusySlots>{});

}  // namespace

void launch_busy(int slot, uint64_t nanoseconds, void* stream) {
  kBusy[static_cast<size_t>(slot)]<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(nanoseconds);
}

const void* busy_kernel_address(int slot) { return reinterpret_cast<const void*>(kBusy[static_cast<size_t>(slot)]); }

const char* const kJitBusySource = R"(
extern "C" __global__ void ppspec_jit_busy(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
)";

}  // namespace ppspec::kernels
