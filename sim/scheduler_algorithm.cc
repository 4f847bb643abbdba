#include "sim/scheduler_algorithm.h"

#include <boost/fiber/operations.hpp>
#include <boost/fiber/type.hpp>
#include <cstdio>
#include <cstdlib>

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

bool SchedulerAlgorithm::has_ready_fibers() const noexcept { return !pinned_.empty() || !others_.empty(); }

void SchedulerAlgorithm::suspend_until(std::chrono::steady_clock::time_point const&) noexcept {
  // Reached only when nothing at all can run. The world turns that into a verdict before it can
  // happen (World::pick_next signals main); getting here means a fiber outside any world is stuck.
  std::fputs("ppspec: internal error: the fiber scheduler has nothing to run\n", stderr);
  std::abort();
}

}  // namespace ppspec::sim
