// What the plugin exports besides NCCL's tables, for harnesses and host programs: found with
// dlsym like NCCL's, C-compatible. `ppspec_profiler_set_call_site` is for a host program (a
// Python caller through ctypes, a C++ framework): the calling thread's next operations carry it
// into the trace, and the watcher's reports name it.
#pragma once

#include <cstdint>

namespace ppspec::nccl_profiler {

inline constexpr int kHooksVersion = 1;

struct HooksTable {
  int version;  // kHooksVersion
  void (*set_clock)(int64_t (*clock)());
  void (*set_call_site)(const char* site);  // nullptr or "" clears
  void (*flush)();
  // 0 when `dir` can hold the job's traces; the plugin is disabled otherwise.
  int (*begin_job)(const char* dir);
  void (*end_job)();
};

}  // namespace ppspec::nccl_profiler

extern "C" {
void ppspec_profiler_set_call_site(const char* site);
}
