#include "sim/stream.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "core/device_fault.h"
#include "core/finding_kinds.h"
#include "sim/comm_system.h"
#include "sim/device.h"
#include "sim/graph.h"
#include "sim/race_detector.h"

namespace ppspec::sim {

SimStream::SimStream(SimDevice& device, int32_t id, std::string name)
    : device_(device),
      id_(id),
      name_(std::move(name)),
      full_name_(fmt::format("rank{}.{}", device.rank(), name_)),
      delay_(device.world().config().delayed_stream == name_ ? device.world().config().stream_delay : 0) {}

void SimStream::enqueue(WorkItem item) {
  PPSPEC_ASSERT(capture_ == nullptr, "capturing streams record into their graph");
  World& w = device_.world();
  if (w.in_fiber() && w.current().kind == FiberKind::host)
    while (queue_.size() >= kStreamQueueMax)
      progress_.wait(w, WaitInfo{.kind = WaitKind::launch_queue, .what = "launch queue full", .stream = this});
  PPSPEC_ASSERT(queue_.size() < kStreamQueueMax + 64, "{} holds {} work items", full_name_, queue_.size());
  if (const VectorClock* c = w.host_clock()) {
    // The item is a copy: a graph's captured items are enqueued again at every replay.
    item.clocks.enqueued = *c;
  }
  if (item.type == WorkItem::Type::wait_flag) device_.on_wait_flag_issued(item, *this);
  item.call_site = device_.caller_site();  // a graph's items: the replay's site
  queue_.push_back(std::move(item));
  ++enqueued_;
  work_.wake_all(device_.world());
}

void SimStream::wait_completed(uint64_t target, const WaitInfo& info) {
  World& w = device_.world();
  while (completed_ < target) progress_.wait(w, info);
}

std::shared_ptr<const VectorClock> SimStream::clock_at_end() {
  if (!device_.world().clocks_on()) return nullptr;
  if (idle()) return std::make_shared<const VectorClock>(clock_);
  if (marks_.empty() || marks_.back().first != enqueued_)
    marks_.emplace_back(enqueued_, std::make_shared<VectorClock>());
  return marks_.back().second;
}

const WorkItem* SimStream::queued_set_of(const SimFlag* flag) const {
  for (size_t i = 0; i < queue_.size(); ++i) {
    const WorkItem& item = queue_.at(i);
    if (item.type == WorkItem::Type::set_flag && item.flag == flag) return &item;
  }
  return nullptr;
}

void SimStream::serve() {
  World& w = device_.world();
  for (;;) {
    while (queue_.empty()) work_.wait(w, WaitInfo{.kind = WaitKind::idle, .what = "idle", .stream = this});
    // The head keeps its address while the host pushes behind it (sim/work_queue.h).
    execute(queue_.front());
    queue_.pop_front();
    ++completed_;
    while (!marks_.empty() && marks_.front().first == completed_) {
      *marks_.front().second = clock_;
      marks_.pop_front();
    }
    PPSPEC_ASSERT(marks_.empty() || marks_.front().first > completed_);
    progress_.wake_all(w);
  }
}

uint32_t SimStream::advance_clock() {
  clock_.bump(fiber_->id);
  return clock_.get(fiber_->id);
}

void SimStream::run_kernel(WorkItem& item) {
  RaceDetector* races = device_.races();
  if (races == nullptr || !item.body) {
    try {
      if (item.body) item.body();
    } catch (const core::DeviceFault& e) {
      fault(item, e);
    }
    return;
  }
  races->begin(fiber_->id, advance_clock(), clock_, AccessItem{this, item.name, item.spec, item.call_site, {}, 0, {}});
  try {
    item.body();
  } catch (const core::DeviceFault& e) {
    // A kernel that indexed past a buffer after reading racing data: the race (which end() reports)
    // is the cause.
    races->end();
    if (races->race()) return;
    fault(item, e);
  } catch (...) {
    races->end();
    throw;
  }
  races->end();
}

// A kernel touched memory outside a buffer: on a GPU an illegal memory access, whose sticky error
// ends the process's GPU work. The run ends with that verdict.
void SimStream::fault(const WorkItem& item, const core::DeviceFault& e) {
  World& w = device_.world();
  core::Finding f;
  f.verdict = core::Verdict::device_fault;
  f.kind = core::FindingKind::device_fault;
  f.engine_step = item.engine_step;
  f.summary = fmt::format(
      "rank{} kernel {}{} on {}{}: {} (row {}) — on a GPU an illegal memory access, whose sticky error ends the job",
      e.rank(), item.name, item.spec.empty() ? "" : fmt::format("[{}]", item.spec), full_name_,
      item.engine_step >= 0 ? fmt::format(" at engine step {}", item.engine_step) : "", e.access(), e.row());
  f.sites.push_back(core::Site{e.rank(), full_name_, "", -1,
                               fmt::format("kernel {}, row {}: {}", item.name, e.row(), e.access()),
                               std::string(item.call_site)});
  f.details.push_back(
      "the kernel read an index from memory (a block table, a request index, a token id) that its buffer does not "
      "hold: a data bug upstream of the kernel, or a buffer sized for fewer rows than the batch");
  w.stop(std::move(f));
}

void SimStream::execute(WorkItem& item) {
  World& w = device_.world();
  switch (item.type) {
    case WorkItem::Type::kernel: {
      clock_.join(item.enqueue_clock());
      if (delay_ > 0) w.sleep(delay_);
      w.sleep(w.jittered(item.duration));
      run_kernel(item);
      if (w.bus().active()) {
        core::Event e = w.event(core::EventKind::kernel_completed, device_.rank(), full_name_);
        e.kernel = item.name;
        e.spec = item.spec;
        w.bus().publish(e);
      }
      return;
    }
    case WorkItem::Type::comm:
      // The kernel's start and completion clocks come from CommSystem::execute (R2, R4).
      if (delay_ > 0) w.sleep(delay_);
      if (device_.races() != nullptr) advance_clock();
      item.comm->call_site = item.call_site;
      device_.comms().execute(*item.comm, *this);
      return;
    case WorkItem::Type::wait_flag: {
      clock_.join(item.enqueue_clock());
      while (!item.flag->set)
        item.flag->waiters.wait(
            w, WaitInfo{.kind = WaitKind::flag_wait, .what = "wait_flag", .stream = this, .flag = item.flag});
      clock_.join(item.flag->clock);
      return;
    }
    case WorkItem::Type::set_flag: {
      clock_.join(item.enqueue_clock());
      w.sleep(w.jittered(w.config().cost.memcpy));
      item.flag->set = true;
      item.flag->clock = clock_;
      device_.on_flag_set(*item.flag);
      item.flag->waiters.wake_all(w);
      return;
    }
    case WorkItem::Type::wait_event: {
      clock_.join(item.enqueue_clock());
      auto* src = const_cast<SimStream*>(item.wait_stream);
      src->wait_completed(
          item.wait_target,
          WaitInfo{.kind = WaitKind::event_wait, .what = "stream_wait_event", .stream = src, .event = &item.event});
      if (item.clocks.awaited) clock_.join(*item.clocks.awaited);
      if (RaceDetector* races = device_.races())
        races->on_event_wait(fiber_->id, item.clocks.awaited, item.event.event, item.call_site);
      return;
    }
  }
}

}  // namespace ppspec::sim
