// Fiber stacks, remembered by the fiber, so that under AddressSanitizer every switch can tell ASan
// which stack runs next (SchedulerAlgorithm): ASan then knows each fiber's stack, and its cleanup
// at a throw covers the right one.
//
// A finished fiber's stack goes back to a bounded pool of its thread and the next fiber takes it.
// Every run spawns fresh fibers, thousands per test: a stack from malloc is, under ASan (1 MiB), a
// fresh mapping whose pages and shadow fault in and are poisoned on free, which made most of the
// sanitizer tests' time system time. A pooled stack is poisoned while it waits (ASan names any
// access to it) and unpoisoned whole when it is taken. Stack addresses never reach a run's
// behaviour, so reuse changes no trace.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>

namespace ppspec::sim {

struct StackExtent {
  const char* bottom = nullptr;
  size_t size = 0;
};

// How many finished stacks a thread keeps for reuse; beyond it they are freed.
inline constexpr size_t kPooledStacksPerThread = 64;

class FiberStack {
 public:
  FiberStack(size_t size, StackExtent* extent) : size_(size), extent_(extent) {}

  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

 private:
  size_t size_;
  StackExtent* extent_;
};

// How many stacks this thread's pool holds now (tests).
size_t pooled_fiber_stacks();

}  // namespace ppspec::sim
