// The Boost.Fiber scheduling algorithm: hands every decision about the world's fibers to the
// active World (and through it to the schedule policy). Installed once per OS thread; worlds
// attach and detach as they run, so many simulations can run one after another on a thread.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <chrono>
#include <deque>

namespace ppspec::sim {

class World;

class SchedulerAlgorithm final : public boost::fibers::algo::algorithm {
 public:
  // The algorithm of the calling OS thread, installed on first use.
  static SchedulerAlgorithm& instance();
  explicit SchedulerAlgorithm(SchedulerAlgorithm** self) { *self = this; }

  void attach(World* w) { world_ = w; }
  void push_pinned(boost::fibers::context* ctx) { pinned_.push_back(ctx); }

  void awakened(boost::fibers::context* ctx) noexcept override;
  boost::fibers::context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override;
  void suspend_until(std::chrono::steady_clock::time_point const& when) noexcept override;
  void notify() noexcept override {}

 private:
  World* world_ = nullptr;
  std::deque<boost::fibers::context*> pinned_;  // the main context and Boost's dispatcher
  std::deque<boost::fibers::context*> others_;  // fibers that belong to no world
};

}  // namespace ppspec::sim
