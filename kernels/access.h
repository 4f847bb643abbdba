// Memory accesses as the simulator's race detector sees them (sim/race_detector.h). On the host,
// every element a kernel touches through a Span, and every byte a simulated copy moves, is told to
// the observer of the work item that runs, if any: a read through a Span<const T>, a write through
// a Span<T> (a read-modify-write counts as a write). The evidence is what the code touched, not
// what a kernel declares. Device code never observes: on a GPU the kernel just runs.
#pragma once

#include <cstddef>

namespace ppspec::kernels {

#if !defined(__CUDA_ARCH__)
class AccessObserver {
 public:
  virtual ~AccessObserver() = default;
  virtual void on_access(const void* first, size_t bytes, bool write) = 0;
};

// The observer of the work item running on this OS thread (the simulator runs every fiber of a
// world on one thread); null when nothing observes, which costs one load and a branch per access.
inline thread_local AccessObserver* t_access_observer = nullptr;

inline void note_access(const void* first, size_t bytes, bool write) {
  if (t_access_observer != nullptr && bytes > 0) t_access_observer->on_access(first, bytes, write);
}
#endif

}  // namespace ppspec::kernels
