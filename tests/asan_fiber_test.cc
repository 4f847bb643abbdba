// Under AddressSanitizer, ASan must know which stack runs: SchedulerAlgorithm tells it at every
// fiber switch. Otherwise a throw on a fiber stack makes ASan ignore __asan_handle_no_return
// (with a warning), the thrower's dead frames keep their redzone poison, and false reports follow.
// In other builds these tests only check that exceptions on fiber stacks unwind as they should.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "sim/fiber_stack.h"
#include "sim/sanitizer.h"
#include "tests/harness.h"

#if defined(PPSPEC_ASAN_ACTIVE)
#include <sanitizer/asan_interface.h>
#endif

namespace ppspec::testing {
namespace {

constexpr int kDepth = 64;  // frames of > 256 bytes each: > 16 KiB of stack below the catcher

// A frame with an array whose address escapes, so that ASan surrounds it with poisoned redzones.
#define PPSPEC_REDZONED_FRAME(depth) \
  char pad[256];                     \
  pad[0] = static_cast<char>(depth); \
  asm volatile("" : : "r"(pad) : "memory")

__attribute__((noinline)) void throw_from_deep(int depth) {
  PPSPEC_REDZONED_FRAME(depth);
  if (depth == 0) throw std::runtime_error("deep");
  throw_from_deep(depth - 1);
}

__attribute__((noinline)) void recv_from_deep(Harness& h, int depth) {
  PPSPEC_REDZONED_FRAME(depth);
  if (depth == 0) {
    (void)h.rt.channel("never").recv();  // nobody sends: the run stops and unwinds this fiber
    return;
  }
  recv_from_deep(h, depth - 1);
}

// True when the stack below the catcher's `marker`, where the thrower's frames lay, is unpoisoned.
__attribute__((noinline)) bool clean_below(const volatile char* marker) {
#if defined(PPSPEC_ASAN_ACTIVE)
  // Clear of the catcher's own frame above and of this frame just below it.
  const char* below = const_cast<const char*>(marker) - 14 * 1024;
  return __asan_region_is_poisoned(const_cast<char*>(below), 12 * 1024) == nullptr;
#else
  return marker != nullptr;
#endif
}

__attribute__((noinline)) bool caught_and_clean() {
  volatile char marker = 0;
  try {
    throw_from_deep(kDepth);
  } catch (const std::runtime_error&) {
    marker = 1;
  }
  return marker == 1 && clean_below(&marker);
}

TEST(AsanFibers, AThrowOnAFiberStackUnpoisonsTheThrowersFrames) {
  Harness h(1);
  bool clean_first = false;
  bool clean_after_switches = false;
  h.actor(0, [&] {
    clean_first = caught_and_clean();
    h.rt.sleep(core::kUs);  // switches to the other fiber and back: ASan follows
    clean_after_switches = caught_and_clean();
  });
  h.actor(
      0, [&] { h.rt.sleep(core::kUs); }, "rank0.other");
  ASSERT_EQ(h.run().verdict, core::Verdict::pass);
  EXPECT_TRUE(clean_first);
  EXPECT_TRUE(clean_after_switches);
}

TEST(AsanFibers, UnwindingAStuckFiberUnpoisonsItsFrames) {
  // A deadlock stops the run; each stuck fiber unwinds with an exception thrown where it blocked.
  Harness h(1);
  bool unwound = false;
  bool clean = false;
  h.actor(0, [&] {
    volatile char marker = 0;
    try {
      recv_from_deep(h, kDepth);
    } catch (const sim::Unwind&) {
      unwound = true;
      clean = clean_below(&marker);
      throw;
    }
  });
  ASSERT_EQ(h.run().verdict, core::Verdict::deadlock);
  EXPECT_TRUE(unwound);
  EXPECT_TRUE(clean);
}

// The address of a local of the only fiber of a passing run; 0 if the run did not pass.
uintptr_t local_address_in_a_run_of_one_fiber() {
  uintptr_t address = 0;
  Harness h(1);
  h.actor(0, [&] {
    volatile char local = 1;
    address = reinterpret_cast<uintptr_t>(&local);
  });
  return h.run().verdict == core::Verdict::pass ? address : 0;
}

// Fiber stacks are pooled per thread (sim/fiber_stack.h): a finished run's stacks serve the next
// run's fibers, the pool never holds more than its bound, and under ASan a pooled stack is
// poisoned until it is taken again.
TEST(FiberStacks, AFinishedRunsStacksServeTheNextRunUpToThePoolsBound) {
  const uintptr_t first_run_local = local_address_in_a_run_of_one_fiber();
  ASSERT_NE(first_run_local, 0u);
#if defined(PPSPEC_ASAN_ACTIVE)
  EXPECT_TRUE(__asan_address_is_poisoned(reinterpret_cast<const void*>(first_run_local)))
      << "a pooled stack must be poisoned while it waits";
#endif
  const size_t pooled_before = sim::pooled_fiber_stacks();
  ASSERT_GE(pooled_before, 1u);
  EXPECT_EQ(local_address_in_a_run_of_one_fiber(), first_run_local) << "the last stack returned is the first one taken";

  const int many = static_cast<int>(sim::kPooledStacksPerThread) * 2;
  {
    Harness h(1);
    for (int i = 0; i < many; ++i)
      h.actor(
          0, [&] { h.rt.sleep(core::kUs); }, fmt::format("rank0.a{}", i));
    ASSERT_EQ(h.run().verdict, core::Verdict::pass);
  }
  EXPECT_EQ(sim::pooled_fiber_stacks(), sim::kPooledStacksPerThread);
}

}  // namespace
}  // namespace ppspec::testing
