// The one simulated world (FoundationDB-style): every host thread and every stream is a fiber on
// one OS thread, a seeded policy picks the next ready fiber, and virtual time jumps to the next
// timer when nothing is ready. Nothing here reads the wall clock or depends on addresses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/rng.h"
#include "core/verdict.h"
#include "sim/config.h"
#include "sim/fiber.h"
#include "sim/policy.h"

namespace ppspec::sim {

// Thrown inside a fiber when the run stops, so the fiber unwinds its stack and ends cleanly.
// Not derived from std::exception: engine code catching std::exception must not swallow it.
struct Unwind {};

using core::kFindingListMax;

class World;

// Fibers waiting for one condition, in the order they started waiting. A woken fiber re-checks its
// condition (single OS thread, so no wake-up can be lost between the check and the wait).
class WaitList {
 public:
  void wait(World& w, const WaitInfo& info);
  // For a condition that every waiter can pass at once (a stream drained, a lock released).
  void wake_all(World& w);
  // For a condition that one waiter consumes (a message): waking all N would cost N re-checks per
  // event, N^2 for N events. Wakes the longest waiter; returns false if nobody waits.
  bool wake_one(World& w);
  bool empty() const { return head_ == waiters_.size(); }

 private:
  std::vector<Fiber*> waiters_;
  size_t head_ = 0;  // waiters_[0, head_) were woken by wake_one: a FIFO without a deque's blocks
};

class World {
 public:
  World(const SimConfig& config, std::unique_ptr<SchedulePolicy> policy, uint64_t seed, core::EventBus& bus);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Before or during the run. Host fibers are actors; stream fibers serve a stream's queue.
  Fiber& spawn(std::string name, FiberKind kind, core::RankId rank, std::function<void()> body);

  // Called from the main context: runs until every fiber finished, nothing can run, or a verdict
  // stopped the run; then unwinds every fiber. `analyze_quiescence` explains a stuck world.
  using QuiescenceAnalyzer = std::function<void(World&)>;
  void run(const QuiescenceAnalyzer& analyze_quiescence);

  // ---- calls made from fibers ----
  Fiber& current() const { return *current_; }
  bool in_fiber() const { return current_ != nullptr; }
  Time now() const { return now_; }
  void block(const WaitInfo& info);  // until wake(); throws Unwind when the run stops
  void wake(Fiber& f);
  void sleep(Time d);                       // virtual time; an interleaving point
  void yield();                             // an interleaving point
  [[noreturn]] void stop(core::Finding f);  // ends the run with this finding
  void request_stop(core::Finding f);       // same, from outside a fiber's normal flow
  // Ends the run for a verdict found outside the world (an event-stream checker): no finding is
  // recorded here, and the run's unfinished operations are not reported as such.
  void halt();
  bool halted() const { return halted_; }
  void note(core::Finding f);
  // As stop() and note(), for a finding already stamped with the time and step of its first bad
  // event (a collective mismatch is reported once every member posted, stamped when one disagreed).
  [[noreturn]] void stop_stamped(core::Finding f);
  void note_stamped(core::Finding f);
  Time jittered(Time d);
  // An event stamped with the current virtual time; the caller fills the rest and publishes it.
  core::Event event(core::EventKind kind, core::RankId rank, std::string_view actor) const {
    core::Event e;
    e.t = now_;
    e.kind = kind;
    e.rank = rank;
    e.actor = actor;
    return e;
  }

  // Happens-before clocks (sim/vector_clock.h) are kept only when some host thread owns a
  // component, decided once before the run; otherwise every clock would stay empty.
  bool clocks_on() const { return clocks_on_; }
  void set_clocks_on(bool on) { clocks_on_ = on; }
  // The calling host thread's clock; null when clocks are off or the caller is no host thread.
  VectorClock* host_clock() {
    return clocks_on_ && current_ != nullptr && current_->kind == FiberKind::host ? &current_->clock : nullptr;
  }

  const SimConfig& config() const { return config_; }
  core::EventBus& bus() { return bus_; }
  bool stopping() const { return stop_requested_ || aborting_; }
  uint64_t steps() const { return steps_; }

  // ---- results ----
  const std::vector<std::unique_ptr<Fiber>>& fibers() const { return fibers_; }
  std::vector<core::Finding>& findings() { return findings_; }
  std::vector<core::Finding>& notes() { return notes_; }
  const std::vector<uint32_t>& decisions() const { return decisions_; }
  bool policy_diverged() const { return policy_->diverged(); }
  bool hosts_all_finished() const { return hosts_alive_ == 0; }

  // ---- the scheduling algorithm's view (sim/scheduler_algorithm.cc) ----
  bool adopt(boost::fibers::context* ctx);
  boost::fibers::context* pick_next();

 private:
  struct Timer {
    Time at;
    uint64_t seq;
    Fiber* fiber;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  // The sleeping fibers, earliest (time, then sequence) first out. A sorted array, latest first:
  // a world holds a few dozen fibers at most, and at that size an insertion's move is cheaper than
  // a heap's sift on every pop.
  class TimerQueue {
   public:
    bool empty() const { return sorted_.empty(); }
    const Timer& top() const { return sorted_.back(); }
    void pop() { sorted_.pop_back(); }
    void push(const Timer& t) {
      const auto at =
          std::lower_bound(sorted_.begin(), sorted_.end(), t, [](const Timer& e, const Timer& v) { return e > v; });
      sorted_.insert(at, t);
    }

   private:
    std::vector<Timer> sorted_;
  };

  [[noreturn]] void throw_unwind();
  void request_stop_stamped(core::Finding f);
  core::Finding limit_finding(core::FindingKind kind, std::string summary) const;
  void make_ready(Fiber& f);
  void release_due_timers();
  void signal_main();
  void fiber_main(Fiber& f);
  void wake_everything();

  SimConfig config_;
  std::unique_ptr<SchedulePolicy> policy_;
  core::Rng jitter_rng_;
  core::EventBus& bus_;

  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<Fiber*> ready_;
  TimerQueue timers_;
  uint64_t timer_seq_ = 0;
  Fiber* current_ = nullptr;
  Fiber* pending_spawn_ = nullptr;
  Fiber* suspending_ = nullptr;   // the fiber whose context is switching out right now
  Fiber* forced_next_ = nullptr;  // already chosen by the policy; pick_next returns it
  boost::fibers::context* main_ctx_ = nullptr;
  bool main_waiting_ = false;

  Time now_ = 0;
  uint64_t steps_ = 0;
  uint32_t live_ = 0;         // fibers not finished
  uint32_t hosts_alive_ = 0;  // host fibers not finished
  bool running_ = false;
  bool stop_requested_ = false;
  bool halted_ = false;
  bool aborting_ = false;
  bool clocks_on_ = false;
  std::exception_ptr internal_error_;

  std::vector<core::Finding> findings_;
  std::vector<core::Finding> notes_;
  std::vector<uint32_t> decisions_;
};

}  // namespace ppspec::sim
