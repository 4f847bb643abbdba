#include "sim/world.h"

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "core/rounding.h"
#include "sim/sanitizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

#include "sim/scheduler_algorithm.h"

namespace ppspec::sim {

namespace {
#if defined(PPSPEC_ASAN_ACTIVE)
constexpr size_t kStackBytes = 1024 * 1024;
#else
constexpr size_t kStackBytes = 256 * 1024;
#endif
}  // namespace

void World::throw_unwind() {
  // Under ASan, the throw unpoisons this fiber's stack below the thrower: ASan knows the stack,
  // because SchedulerAlgorithm tells it about every switch.
  throw Unwind{};
}

void WaitList::wait(World& w, const WaitInfo& info) {
  waiters_.push_back(&w.current());
  w.block(info);
}

void WaitList::wake_all(World& w) {
  // make_ready touches no wait list, so the list cannot change while it is walked.
  for (size_t i = head_; i < waiters_.size(); ++i) w.wake(*waiters_[i]);
  waiters_.clear();
  head_ = 0;
}

bool WaitList::wake_one(World& w) {
  while (head_ < waiters_.size()) {
    Fiber* f = waiters_[head_++];
    if (head_ == waiters_.size()) {
      waiters_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= waiters_.size()) {
      // Receivers that keep coming back would grow the list forever; dropping the woken prefix
      // when it is half the list keeps wake_one O(1) amortised.
      waiters_.erase(waiters_.begin(), waiters_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    // Only a run that is unwinding wakes a fiber behind its list's back; skip such a waiter.
    if (f->state != FiberState::blocked) continue;
    w.wake(*f);
    return true;
  }
  return false;
}

World::World(const SimConfig& config, std::unique_ptr<SchedulePolicy> policy, uint64_t seed, core::EventBus& bus)
    : config_(config), policy_(std::move(policy)), jitter_rng_(core::derive_seed(seed, 7)), bus_(bus) {}

World::~World() {
  // A world that was never run still owns fibers that never started; run them to their end so
  // that Boost sees no joinable fiber destroyed.
  if (!running_ && live_ > 0) {
    aborting_ = true;
    run([](World&) {});
  }
}

Fiber& World::spawn(std::string name, FiberKind kind, core::RankId rank, std::function<void()> body) {
  auto fiber = std::make_unique<Fiber>();
  Fiber& f = *fiber;
  f.id = static_cast<uint32_t>(fibers_.size());
  f.name = std::move(name);
  f.kind = kind;
  f.rank = rank;
  f.body = std::move(body);
  fibers_.push_back(std::move(fiber));
  policy_->on_spawn(f);
  ++live_;
  if (kind == FiberKind::host) ++hosts_alive_;

  SchedulerAlgorithm& algo = SchedulerAlgorithm::instance();
  algo.attach(this);
  pending_spawn_ = &f;
  // Construction schedules the new context at once, which calls adopt() below.
  f.handle = boost::fibers::fiber(std::allocator_arg, FiberStack(kStackBytes, &f.stack), [this, &f] { fiber_main(f); });
  PPSPEC_ASSERT(pending_spawn_ == nullptr, "the scheduler did not adopt the new fiber");
  return f;
}

bool World::adopt(boost::fibers::context* ctx) {
  if (pending_spawn_ == nullptr) return false;
  pending_spawn_->ctx = ctx;
  SchedulerAlgorithm::stack_of(ctx, pending_spawn_->stack.bottom, pending_spawn_->stack.size);
  make_ready(*pending_spawn_);
  pending_spawn_ = nullptr;
  return true;
}

void World::fiber_main(Fiber& f) {
  SchedulerAlgorithm::arrived();
  try {
    if (!aborting_) f.body();
  } catch (const Unwind&) {
    // The run stopped; this fiber's stack is unwound.
  } catch (...) {
    // A bug in ppspec or in the system under test: stop the run and rethrow from run().
    if (!internal_error_) internal_error_ = std::current_exception();
    stop_requested_ = true;
    signal_main();
  }
  f.state = FiberState::finished;
  f.wait = WaitInfo{.kind = WaitKind::finished};
  --live_;
  if (f.kind == FiberKind::host) --hosts_alive_;
  if (live_ == 0) signal_main();
  SchedulerAlgorithm::stack_ends(f.ctx);  // Boost switches away from it for good next
}

void World::make_ready(Fiber& f) {
  f.state = FiberState::ready;
  f.wait = WaitInfo{};
  ready_.push_back(&f);
}

void World::signal_main() {
  if (!main_waiting_) return;
  main_waiting_ = false;
  SchedulerAlgorithm::instance().push_pinned(main_ctx_);
}

void World::release_due_timers() {
  while (!timers_.empty() && timers_.top().at <= now_) {
    Fiber* f = timers_.top().fiber;
    timers_.pop();
    make_ready(*f);
  }
}

boost::fibers::context* World::pick_next() {
  // Main is running or was signalled (it waits in the pinned queue): let it run.
  if (!main_waiting_) return nullptr;
  if (forced_next_ != nullptr) {
    // Chosen earlier (by yield(), or below for a fiber that was still switching out).
    Fiber* f = forced_next_;
    if (f == suspending_) return nullptr;  // still on its own stack: go through the dispatcher
    forced_next_ = nullptr;
    ready_.erase(std::find(ready_.begin(), ready_.end(), f));
    f->state = FiberState::running;
    current_ = f;
    suspending_ = nullptr;
    return f->ctx;
  }
  if (ready_.empty() && !timers_.empty()) {
    const Time next = timers_.top().at;
    PPSPEC_ASSERT(next >= now_);
    now_ = next;
    release_due_timers();
    if (now_ > config_.max_time && !stop_requested_) {
      request_stop(limit_finding(
          core::FindingKind::time_limit,
          fmt::format("the run exceeded its virtual time budget of {} ms", config_.max_time / core::kMs)));
      return nullptr;
    }
  }
  if (ready_.empty()) {
    // Nothing can run and no timer is pending: the world is quiescent (finished or stuck).
    signal_main();
    return nullptr;
  }
  ++steps_;
  if (steps_ > config_.max_steps && !stop_requested_) {
    request_stop(limit_finding(core::FindingKind::step_limit,
                               fmt::format("the run exceeded its budget of {} scheduling steps", config_.max_steps)));
    return nullptr;
  }
  const size_t i = policy_->pick(ready_, steps_);
  Fiber* f = ready_[i];
  if (config_.record_decisions && ready_.size() > 1) decisions_.push_back(f->id);
  if (f == suspending_) {
    // Boost cannot resume the context that is switching out: hand control to the dispatcher,
    // whose own pick_next (after the switch completed) resumes this fiber.
    forced_next_ = f;
    suspending_ = nullptr;
    return nullptr;
  }
  // Keep the ready list in insertion order: schedules stay meaningful to replay and to read.
  ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
  f->state = FiberState::running;
  current_ = f;
  suspending_ = nullptr;
  return f->ctx;
}

void World::block(const WaitInfo& info) {
  Fiber& f = *current_;
  if (aborting_) throw_unwind();
  f.wait = info;
  f.state = FiberState::blocked;
  current_ = nullptr;
  suspending_ = &f;
  f.ctx->suspend();
  // Resumed: pick_next made this fiber current again.
  SchedulerAlgorithm::arrived();
  if (aborting_) throw_unwind();
}

void World::wake(Fiber& f) {
  if (f.state != FiberState::blocked) return;
  make_ready(f);
}

void World::sleep(Time d) {
  if (d <= 0) {
    yield();
    return;
  }
  if (aborting_) throw_unwind();
  const Time wake_at = now_ + d;
  if (ready_.empty() && (timers_.empty() || timers_.top().at > wake_at) && wake_at <= config_.max_time) {
    // Nobody else can run before this fiber wakes: no decision to make, so skip the switch.
    now_ = wake_at;
    ++steps_;
    if (steps_ <= config_.max_steps) return;
  }
  timers_.push(Timer{wake_at, timer_seq_++, current_});
  block(WaitInfo{.kind = WaitKind::timer});
}

void World::yield() {
  if (aborting_) throw_unwind();
  release_due_timers();
  if (ready_.empty()) return;  // nobody else can run at this instant: no decision to make
  Fiber& f = *current_;
  make_ready(f);
  ++steps_;
  const size_t i = policy_->pick(ready_, steps_);
  Fiber* next = ready_[i];
  if (config_.record_decisions) decisions_.push_back(next->id);
  if (next == &f) {
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
    f.state = FiberState::running;
    return;
  }
  forced_next_ = next;
  current_ = nullptr;
  suspending_ = &f;
  f.ctx->suspend();
  SchedulerAlgorithm::arrived();
  if (aborting_) throw_unwind();
}

Time World::jittered(Time d) {
  if (d <= 0 || config_.jitter <= 0) return d;
  const double factor = 1.0 + config_.jitter * jitter_rng_.symmetric_unit();
  return std::max<Time>(1, static_cast<Time>(core::round_half_away(static_cast<double>(d) * factor)));
}

core::Finding World::limit_finding(core::FindingKind kind, std::string summary) const {
  core::Finding f;
  f.verdict = core::Verdict::step_limit;
  f.kind = kind;
  f.summary = std::move(summary);
  f.details.push_back(
      "a livelock, a program that never ends, or a budget too small for the scenario "
      "([runtime] max_steps / max_time_ms)");
  size_t running = 0;
  for (const auto& fib : fibers_) {
    if (fib->kind != FiberKind::host || fib->state == FiberState::finished) continue;
    if (++running <= kFindingListMax) f.sites.push_back(core::Site{fib->rank, fib->name, "", -1, "still running", ""});
  }
  if (running > kFindingListMax)
    f.details.push_back(fmt::format("… and {} more host threads still running", running - kFindingListMax));
  return f;
}

void World::request_stop(core::Finding f) {
  f.time = now_;
  f.sched_step = steps_;
  request_stop_stamped(std::move(f));
}

void World::request_stop_stamped(core::Finding f) {
  if (stop_requested_) return;  // the first finding decides; later ones are consequences
  findings_.push_back(std::move(f));
  stop_requested_ = true;
  signal_main();
}

void World::stop_stamped(core::Finding f) {
  request_stop_stamped(std::move(f));
  throw_unwind();
}

void World::note_stamped(core::Finding f) { notes_.push_back(std::move(f)); }

void World::halt() {
  if (stop_requested_) return;
  halted_ = true;
  stop_requested_ = true;
  signal_main();
}

void World::stop(core::Finding f) {
  request_stop(std::move(f));
  throw_unwind();
}

void World::note(core::Finding f) {
  f.time = now_;
  f.sched_step = steps_;
  note_stamped(std::move(f));
}

void World::wake_everything() {
  while (!timers_.empty()) {
    Fiber* f = timers_.top().fiber;
    timers_.pop();
    if (f->state == FiberState::blocked) make_ready(*f);
  }
  for (auto& f : fibers_)
    if (f->state == FiberState::blocked) make_ready(*f);
}

void World::run(const QuiescenceAnalyzer& analyze_quiescence) {
  SchedulerAlgorithm& algo = SchedulerAlgorithm::instance();
  algo.attach(this);
  running_ = true;
  main_ctx_ = boost::fibers::context::active();
  int unwind_rounds = 0;
  while (live_ > 0) {
    main_waiting_ = true;
    main_ctx_->suspend();
    SchedulerAlgorithm::arrived();
    // Back in main: the world is quiescent, a verdict stopped it, or every fiber finished.
    if (live_ == 0) break;
    if (!aborting_) {
      if (!stop_requested_) analyze_quiescence(*this);
      aborting_ = true;
    } else if (++unwind_rounds > 100) {
      std::fputs("ppspec: internal error: fibers keep blocking while the run unwinds\n", stderr);
      std::abort();
    }
    wake_everything();
  }
  aborting_ = true;
  for (auto& f : fibers_)
    if (f->handle.joinable()) f->handle.join();
  running_ = false;
  algo.attach(nullptr);
  if (internal_error_) std::rethrow_exception(internal_error_);
}

}  // namespace ppspec::sim
