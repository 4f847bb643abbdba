// What the plugin exports besides NCCL's tables, for harnesses and host programs: found with dlsym
// like NCCL's, C-compatible.
// * `ppspec_profiler_set_call_site`: the calling thread's next operations carry this text into the
//   trace, and the watcher's reports name it (a Python caller through ctypes, a C++ framework).
// * `ppspec_profiler_set_rank`: the job rank of the communicators the calling thread initialises
//   next, for a process that drives several GPUs (one rank per thread); -1 returns to the
//   environment's (PPSPEC_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID).
// The hooks table adds what only a harness needs (the simulator's adapter): its clock, flushing on
// demand, and jobs recorded one after another into folders of its choosing.
#pragma once

#include <cstdint>

namespace ppspec::nccl_profiler {

inline constexpr int kHooksVersion = 1;

struct HooksTable {
  int version;  // kHooksVersion
  void (*set_clock)(int64_t (*clock)());
  void (*set_call_site)(const char* site);  // nullptr or "" clears
  void (*set_rank)(int rank);
  void (*flush)();
  // 0 when `dir` can hold the job's traces; the plugin is disabled otherwise.
  int (*begin_job)(const char* dir);
  void (*end_job)();
};

}  // namespace ppspec::nccl_profiler

extern "C" {
void ppspec_profiler_set_call_site(const char* site);
void ppspec_profiler_set_rank(int rank);
}
