// The persistent kernel of wait_flag: spins until another stream (or thread) sets its flag.
#include <cuda_runtime.h>

#include "kernels/program_kernels.h"

namespace ppspec::kernels {
namespace {

__global__ void wait_flag_kernel(volatile int* flag) {
  while (*flag == 0) __nanosleep(1000);
}

}  // namespace

void launch_wait_flag(volatile int* flag, void* stream) {
  wait_flag_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag);
}

}  // namespace ppspec::kernels
