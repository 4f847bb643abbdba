// A simulated GPU stream: a fiber that executes its queue in order. Compute kernels take virtual
// time; communication kernels occupy the stream until their partners arrive (R4).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/types.h"
#include "sim/vector_clock.h"
#include "sim/work_queue.h"
#include "sim/world.h"

namespace ppspec::core {
class DeviceFault;
}

namespace ppspec::sim {

class SimDevice;
struct CommKernel;
struct GraphRec;

// Happens-before for one work item, kept only while World::clocks_on (sim/blocking_hazards.h):
// the enqueuing thread's clock, and for wait_event the recording stream's clock at the awaited
// position (filled when it gets there). In the item itself: a move of it is a few pointers, and
// race-checked runs enqueue every item with clocks (a heap block each cost more than the moves).
struct ItemClocks {
  VectorClock enqueued;
  std::shared_ptr<const VectorClock> awaited;
};

struct WorkItem {
  enum class Type : uint8_t { kernel, comm, wait_event, wait_flag, set_flag };
  Type type = Type::kernel;
  std::string_view name;  // kernel name (for events)
  std::string_view spec;
  Time duration = 0;                       // kernel: virtual time before jitter
  std::function<void()> body;              // kernel: its effect, applied when it completes
  CommKernel* comm = nullptr;              // comm
  const SimStream* wait_stream = nullptr;  // wait_event: the recording stream ...
  uint64_t wait_target = 0;                // ... and the position it must reach
  EventWaitSite event{};                   // wait_event: the event, for reports
  SimFlag* flag = nullptr;                 // wait_flag, set_flag
  ItemClocks clocks;                       // empty while clocks are off
  std::string_view call_site;              // where the host enqueued it, for race reports
  int64_t engine_step = -1;                // kernel: the engine step its host was executing (-1: none)

  const VectorClock& enqueue_clock() const { return clocks.enqueued; }
};

class SimStream {
 public:
  SimStream(SimDevice& device, int32_t id, std::string name);
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  int32_t id() const { return id_; }
  const std::string& name() const { return name_; }            // "side"
  const std::string& full_name() const { return full_name_; }  // "rank0.side"
  SimDevice& device() const { return device_; }
  Fiber* fiber() const { return fiber_; }
  void set_fiber(Fiber* f) { fiber_ = f; }

  // Host side.
  void enqueue(WorkItem item);
  uint64_t enqueued() const { return enqueued_; }
  uint64_t completed() const { return completed_; }
  bool idle() const { return completed_ == enqueued_; }
  // Blocks the calling fiber until this stream has completed `target` items.
  void wait_completed(uint64_t target, const WaitInfo& info);
  const WorkItem* head() const { return queue_.empty() ? nullptr : &queue_.front(); }
  // Whether a set_flag of `flag` is queued (not yet executed) on this stream: the first such item.
  bool queues_set_of(const SimFlag* flag) const { return queued_set_of(flag) != nullptr; }
  const WorkItem* queued_set_of(const SimFlag* flag) const;

  // Happens-before: what the stream's completed work knows (its last item's completion clock),
  // and a cell that will hold that clock once the stream completes everything enqueued so far —
  // what a sync or an event recorded now observes. Null while clocks are off.
  const VectorClock& clock() const { return clock_; }
  void observe(const VectorClock& c) { clock_.join(c); }
  std::shared_ptr<const VectorClock> clock_at_end();

  // Graph capture (R9): while capturing, enqueue() records into the graph instead.
  GraphRec* capture() const { return capture_; }
  void set_capture(GraphRec* g) { capture_ = g; }

  // The stream fiber's body.
  void serve();

  // Race detection: the stream's own clock component moves on as an item starts; the tick names
  // the item in race reports (sim/race_detector.h).
  uint32_t advance_clock();

 private:
  void execute(WorkItem& item);
  void run_kernel(WorkItem& item);
  [[noreturn]] void fault(const WorkItem& item, const core::DeviceFault& e);

  SimDevice& device_;
  int32_t id_;
  std::string name_;
  std::string full_name_;
  Fiber* fiber_ = nullptr;
  WorkQueue<WorkItem> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  WaitList work_;      // the stream fiber, waiting for work
  WaitList progress_;  // anyone waiting for this stream to reach a position
  GraphRec* capture_ = nullptr;
  Time delay_;  // SimConfig::stream_delay when this is the delayed stream, else 0
  VectorClock clock_;
  // Cells to fill when the stream's completed count reaches the position, in increasing order:
  // every request is for the end of the stream at the time it is made.
  std::deque<std::pair<uint64_t, std::shared_ptr<VectorClock>>> marks_;
};

}  // namespace ppspec::sim
