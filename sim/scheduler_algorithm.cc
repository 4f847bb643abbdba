#include "sim/scheduler_algorithm.h"

#include "core/assert.h"
#include "sim/sanitizer.h"

#include <boost/fiber/operations.hpp>
#include <boost/fiber/type.hpp>
#include <cstdio>
#include <cstdlib>
#if defined(PPSPEC_ASAN_ACTIVE)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

#include <cstring>
#endif

#include "sim/world.h"

namespace ppspec::sim {

namespace {
thread_local SchedulerAlgorithm* t_instance = nullptr;
}

SchedulerAlgorithm& SchedulerAlgorithm::instance() {
  // Boost owns the algorithm object; its constructor tells us where it is.
  if (t_instance == nullptr) boost::fibers::use_scheduling_algorithm<SchedulerAlgorithm>(&t_instance);
  return *t_instance;
}

void SchedulerAlgorithm::awakened(boost::fibers::context* ctx) noexcept {
  if (ctx->is_context(boost::fibers::type::pinned_context)) {
    pinned_.push_back(ctx);
  } else if (world_ == nullptr || !world_->adopt(ctx)) {
    others_.push_back(ctx);
  }
}

boost::fibers::context* SchedulerAlgorithm::pick_next() noexcept {
#if defined(PPSPEC_ASAN_ACTIVE)
  finish_switch();  // on Boost's dispatcher, which a switch reaches inside Boost's own code
  boost::fibers::context* next = choose();
  if (next != nullptr) start_switch(next);
  return next;
#else
  return choose();
#endif
}

boost::fibers::context* SchedulerAlgorithm::choose() noexcept {
  if (world_ != nullptr) {
    if (boost::fibers::context* c = world_->pick_next()) return c;
  }
  if (!others_.empty()) {
    boost::fibers::context* c = others_.front();
    others_.pop_front();
    return c;
  }
  if (!pinned_.empty()) {
    boost::fibers::context* c = pinned_.front();
    pinned_.pop_front();
    return c;
  }
  return nullptr;
}

#if defined(PPSPEC_ASAN_ACTIVE)

void SchedulerAlgorithm::note_stack(const boost::fibers::context* ctx, const void* bottom, size_t size) {
  stacks_[ctx] = AsanStack{bottom, size, nullptr, false};
}

void SchedulerAlgorithm::note_stack_ends(const boost::fibers::context* ctx) { stacks_[ctx].ending = true; }

void SchedulerAlgorithm::start_switch(boost::fibers::context* to) {
  boost::fibers::context* from = boost::fibers::context::active();
  PPSPEC_ASSERT(switch_from_ == nullptr, "a switch starts only once the previous one finished");
  PPSPEC_ASSERT(from != to);
  if (main_ == nullptr && from->is_context(boost::fibers::type::main_context)) main_ = from;
  switch_from_ = from;
  switch_to_ = to;
  const AsanStack in = stacks_[to];
  AsanStack& out = stacks_[from];
  // An ending fiber's fake stack (detect_stack_use_after_return=1 only) is saved, not dropped with
  // a null save as ASan suggests: Boost's terminate path still writes into a frame on it (the
  // return slot of the fiber's entry function) up to the switch itself. It is left behind.
  __sanitizer_start_switch_fiber(&out.fake_stack, in.bottom, in.size);
  if (out.ending) stacks_.erase(from);
}

namespace {

// The heap block that holds the running stack, if it is one: Boost allocates its dispatcher's
// stack itself, out of sight, but through malloc, whose blocks ASan knows.
bool locate_running_stack(const void*& bottom, size_t& size) {
  char kind_name[8] = {};
  void* region = nullptr;
  size_t region_size = 0;
  // The frame address, not a local's: under detect_stack_use_after_return a local may live on
  // ASan's fake stack.
  const char* kind =
      __asan_locate_address(__builtin_frame_address(0), kind_name, sizeof kind_name, &region, &region_size);
  if (kind == nullptr || std::strcmp(kind, "heap") != 0 || region == nullptr) return false;
  bottom = region;
  size = region_size;
  return true;
}

}  // namespace

void SchedulerAlgorithm::finish_switch() {
  if (switch_from_ == nullptr) return;  // already finished here (or nothing switched yet)
  const void* left_bottom = nullptr;
  size_t left_size = 0;
  AsanStack& here = stacks_[switch_to_];
  __sanitizer_finish_switch_fiber(here.fake_stack, &left_bottom, &left_size);
  // The stack just left, if its extent was unknown: the main thread's, as ASan knew it.
  auto left = stacks_.find(switch_from_);
  if (left != stacks_.end() && left->second.bottom == nullptr) {
    left->second.bottom = left_bottom;
    left->second.size = left_size;
  }
  switch_from_ = switch_to_ = nullptr;
  if (here.bottom == nullptr && locate_running_stack(here.bottom, here.size)) {
    // Boost's dispatcher, reached for the first time with an extent ASan could not be told:
    // tell it now, with a switch from this stack to itself.
    __sanitizer_start_switch_fiber(&here.fake_stack, here.bottom, here.size);
    __sanitizer_finish_switch_fiber(here.fake_stack, nullptr, nullptr);
  }
}

SchedulerAlgorithm::~SchedulerAlgorithm() {
  // The thread's scheduler shuts down: its dispatcher returned to the main context through
  // Boost's own code, without pick_next. Tell ASan the main stack runs again.
  if (main_ == nullptr) return;
  finish_switch();
  const AsanStack& m = stacks_[main_];
  __sanitizer_start_switch_fiber(nullptr, m.bottom, m.size);
  __sanitizer_finish_switch_fiber(m.fake_stack, nullptr, nullptr);
}

#endif

bool SchedulerAlgorithm::has_ready_fibers() const noexcept { return !pinned_.empty() || !others_.empty(); }

void SchedulerAlgorithm::suspend_until(std::chrono::steady_clock::time_point const&) noexcept {
  // Reached only when nothing at all can run. The world turns that into a verdict before it can
  // happen (World::pick_next signals main); getting here means a fiber outside any world is stuck.
  std::fputs("ppspec: internal error: the fiber scheduler has nothing to run\n", stderr);
  std::abort();
}

}  // namespace ppspec::sim
