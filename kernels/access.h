// Memory accesses as the simulator's race detector sees them (sim/race_detector.h). On the host,
// every element a kernel touches through a Span, and every byte a simulated copy moves, is told to
// the observer of the work item that runs, if any: a read through a Span<const T>, a write through
// a Span<T> (a read-modify-write counts as a write). The evidence is what the code touched, not
// what a kernel declares. An access the observer has already recorded for the same item, in the same
// mode, is not told again: the observer answers each access with the bytes around it it has
// recorded, and the Span remembers them; and the next element after a run of them is added to the
// run by the Span itself (most of a kernel's accesses walk a buffer forwards). Device code never
// observes: on a GPU the kernel just runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ppspec::kernels {

#if !defined(__CUDA_ARCH__)
// Bytes an observer has recorded for the item that runs, in the mode of the access that asked or a
// stronger one (a write covers reads); empty when it records nothing. `run` names the run they
// belong to (1 + its index in t_access_runs), 0 when none.
struct CheckedBytes {
  const void* begin = nullptr;
  const void* end = nullptr;
  uint32_t run = 0;
};

// Bytes the running item has accessed one after another, one way: the observer checks them when
// the run is put aside or the item ends (within an item nothing else runs, so when does not change
// what is found). The next element past `end`, accessed the same way, extends the run where it is:
// `end` moves on, without a call (Span::remembered), as long as it stays within `limit` (the end of
// the allocation: a run never crosses into another).
struct AccessRun {
  const unsigned char* begin = nullptr;
  const unsigned char* end = nullptr;
  const unsigned char* limit = nullptr;
  bool write = false;
};

class AccessObserver {
 public:
  virtual ~AccessObserver() = default;
  // Records [first, first + bytes) and returns the bytes around it that further accesses of the
  // same item, in the same mode, need not be told (a Span remembers them: kernels/span.h).
  virtual CheckedBytes on_access(const void* first, size_t bytes, bool write) = 0;
};

// The observer of the work item running on this OS thread (the simulator runs every fiber of a
// world on one thread); null when nothing observes, which costs one load and a branch per access.
inline thread_local AccessObserver* t_access_observer = nullptr;
// The item being observed: every item an observer begins gets a number not used before on this
// thread, so what a Span remembers of one item is never taken for another's.
inline thread_local uint64_t t_access_item = 0;
// The observer's runs while it observes (CheckedBytes::run indexes them).
inline thread_local AccessRun* t_access_runs = nullptr;

inline void note_access(const void* first, size_t bytes, bool write) {
  if (t_access_observer != nullptr && bytes > 0) t_access_observer->on_access(first, bytes, write);
}
#endif

}  // namespace ppspec::kernels
