#include "sim/stream.h"

#include <cassert>
#include <fmt/format.h>

#include "core/assert.h"
#include "sim/comm_system.h"
#include "sim/device.h"
#include "sim/graph.h"

namespace ppspec::sim {

SimStream::SimStream(SimDevice& device, int32_t id, std::string name)
    : device_(device), id_(id), name_(std::move(name)), full_name_(fmt::format("rank{}.{}", device.rank(), name_)) {}

void SimStream::enqueue(WorkItem item) {
  assert(capture_ == nullptr && "capturing streams record into their graph");
  World& w = device_.world();
  if (w.in_fiber() && w.current().kind == FiberKind::host)
    while (queue_.size() >= kStreamQueueMax)
      progress_.wait(w, WaitInfo{.kind = WaitKind::launch_queue, .what = "launch queue full", .stream = this});
  PPSPEC_ASSERT(queue_.size() < kStreamQueueMax + 64, "{} holds {} work items", full_name_, queue_.size());
  queue_.push_back(std::move(item));
  ++enqueued_;
  work_.wake_all(device_.world());
}

void SimStream::wait_completed(uint64_t target, const WaitInfo& info) {
  World& w = device_.world();
  while (completed_ < target) progress_.wait(w, info);
}

bool SimStream::queues_set_of(const SimFlag* flag) const {
  for (const WorkItem& item : queue_)
    if (item.type == WorkItem::Type::set_flag && item.flag == flag) return true;
  return false;
}

void SimStream::serve() {
  World& w = device_.world();
  for (;;) {
    while (queue_.empty()) work_.wait(w, WaitInfo{.kind = WaitKind::idle, .what = "idle", .stream = this});
    // Deque references stay valid while the host appends behind us.
    execute(queue_.front());
    queue_.pop_front();
    ++completed_;
    progress_.wake_all(w);
  }
}

void SimStream::execute(WorkItem& item) {
  World& w = device_.world();
  switch (item.type) {
    case WorkItem::Type::kernel: {
      w.sleep(w.jittered(item.duration));
      if (item.body) item.body();
      if (w.bus().active()) {
        core::Event e = w.event(core::EventKind::kernel_completed, device_.rank(), full_name_);
        e.kernel = item.name;
        e.spec = item.spec;
        w.bus().publish(e);
      }
      return;
    }
    case WorkItem::Type::comm:
      device_.comms().execute(*item.comm, *this);
      return;
    case WorkItem::Type::wait_flag: {
      while (!item.flag->set)
        item.flag->waiters.wait(w, WaitInfo{.kind = WaitKind::flag_wait, .what = "wait_flag", .stream = this, .flag = item.flag});
      return;
    }
    case WorkItem::Type::set_flag: {
      w.sleep(w.jittered(w.config().cost.memcpy));
      item.flag->set = true;
      item.flag->waiters.wake_all(w);
      return;
    }
    case WorkItem::Type::wait_event: {
      auto* src = const_cast<SimStream*>(item.wait_stream);
      src->wait_completed(item.wait_target, WaitInfo{.kind = WaitKind::event_wait, .what = "stream_wait_event",
                                                     .stream = src, .event = item.event});
      return;
    }
  }
}

}  // namespace ppspec::sim
