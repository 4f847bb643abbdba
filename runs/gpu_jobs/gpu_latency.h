#pragma once

#include <cstdint>

namespace ppspec::gpu_jobs {

// Prints round-trip figures; exit status 2 when the machine has fewer than two GPUs.
int gpu_latency_main(int iterations, int64_t bytes);

}  // namespace ppspec::gpu_jobs
