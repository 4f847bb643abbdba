// The Boost.Fiber scheduling algorithm: hands every decision about the world's fibers to the
// active World (and through it to the schedule policy). Installed once per OS thread; worlds
// attach and detach as they run, so many simulations can run one after another on a thread.
//
// Under AddressSanitizer it also tells ASan about every change of stack. Boost.Fiber 1.74 calls
// pick_next() on the outgoing stack right before each switch (a fiber suspending, a fiber ending,
// the main context waiting, its own dispatcher loop), and the context it returns is the one that
// runs next: pick_next starts the switch, and the code that runs first on the new stack finishes
// it (SchedulerAlgorithm::arrived, or pick_next itself on Boost's dispatcher stack).
#pragma once

#include "sim/sanitizer.h"

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#if defined(PPSPEC_ASAN_ACTIVE)
#include <map>
#endif

namespace ppspec::sim {

class World;

class SchedulerAlgorithm final : public boost::fibers::algo::algorithm {
 public:
  // The algorithm of the calling OS thread, installed on first use.
  static SchedulerAlgorithm& instance();
  explicit SchedulerAlgorithm(SchedulerAlgorithm** self) { *self = this; }

  void attach(World* w) { world_ = w; }
  void push_pinned(boost::fibers::context* ctx) { pinned_.push_back(ctx); }

  // ASan's view of the stacks; in other builds these are empty and cost nothing, not even the
  // look-up of the instance.
#if defined(PPSPEC_ASAN_ACTIVE)
  ~SchedulerAlgorithm() override;
  // The stack `ctx` runs on (a world fiber's; the main context's is learnt at its first switch).
  static void stack_of(const boost::fibers::context* ctx, const void* bottom, size_t size) {
    instance().note_stack(ctx, bottom, size);
  }
  // `ctx` runs its last code: Boost switches away from it for good next.
  static void stack_ends(const boost::fibers::context* ctx) { instance().note_stack_ends(ctx); }
  // Called first on a stack a switch arrived on (after suspend() returns, at a fiber's entry).
  static void arrived() { instance().finish_switch(); }
#else
  static void stack_of(const boost::fibers::context*, const void*, size_t) {}
  static void stack_ends(const boost::fibers::context*) {}
  static void arrived() {}
#endif

  void awakened(boost::fibers::context* ctx) noexcept override;
  boost::fibers::context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override;
  void suspend_until(std::chrono::steady_clock::time_point const& when) noexcept override;
  void notify() noexcept override {}

 private:
  boost::fibers::context* choose() noexcept;

  World* world_ = nullptr;
  std::deque<boost::fibers::context*> pinned_;  // the main context and Boost's dispatcher
  std::deque<boost::fibers::context*> others_;  // fibers that belong to no world

#if defined(PPSPEC_ASAN_ACTIVE)
  struct AsanStack {
    const void* bottom = nullptr;  // null until known (the main stack's and the dispatcher's)
    size_t size = 0;
    void* fake_stack = nullptr;  // ASan's fake stack of this stack while another one runs
    bool ending = false;
  };
  void note_stack(const boost::fibers::context* ctx, const void* bottom, size_t size);
  void note_stack_ends(const boost::fibers::context* ctx);
  void start_switch(boost::fibers::context* to);
  void finish_switch();

  // Keyed by address for look-ups only, never iterated; ASan builds only.
  std::map<const boost::fibers::context*, AsanStack> stacks_;
  const boost::fibers::context* switch_from_ = nullptr;  // a started switch not finished yet
  const boost::fibers::context* switch_to_ = nullptr;
  const boost::fibers::context* main_ = nullptr;  // the OS thread's own context, once it switched
#endif
};

}  // namespace ppspec::sim
