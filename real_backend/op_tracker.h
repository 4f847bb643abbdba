// Every communication operation a rank posted, until the GPU says it completed: the poller
// threads (one per device) ask CUDA; the watchdog reads only this host-side record, so a thread
// stuck inside the driver cannot stop it from reporting.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/event.h"
#include "core/op.h"

namespace ppspec::real {

class RealRuntime;

// A CUDA event shared by the operations it marks complete (all of one group on one stream).
struct CompletionEvent {
  void* event = nullptr;  // cudaEvent_t
  core::RankId rank = -1;
  ~CompletionEvent();
};

// A communication operation, or a persistent kernel (wait_flag) whose never-ending run a hang dump
// must show.
struct TrackedOp {
  std::string kernel;  // non-empty for a tracked kernel, which has no `desc`
  int64_t op_id = -1;
  core::RankId rank = -1;
  std::string comm;
  std::string actor;  // stream, e.g. "rank0.side"
  std::string label;
  std::string origin;
  core::OpDesc desc;  // desc.label.name points into `label`
  int64_t cseq = -1;
  int64_t group = -1;  // the thread's ncclGroupStart..End it was posted in; -1: none
  core::Time posted_at = 0;
  std::shared_ptr<CompletionEvent> done;
  bool completed = false;
};

class OpTracker {
 public:
  explicit OpTracker(RealRuntime& rt, int ranks) : rt_(rt), pending_(static_cast<size_t>(ranks)) {}
  ~OpTracker();

  // Records a posted operation and publishes op_posted. The returned pointer stays valid until
  // the operation completes.
  TrackedOp* add(std::unique_ptr<TrackedOp> op);
  void attach(const std::vector<TrackedOp*>& ops, std::shared_ptr<CompletionEvent> done);

  void start();
  void stop();
  bool idle() const;
  uint64_t posted() const { return posted_.load(); }
  // Host-side snapshot for the watchdog: no CUDA call.
  std::vector<core::Event> pending_events(core::Time now, std::deque<std::string>& storage) const;

 private:
  void poll(core::RankId rank);

  RealRuntime& rt_;
  mutable std::mutex mu_;
  std::vector<std::deque<std::unique_ptr<TrackedOp>>> pending_;  // by rank, in posting order
  std::vector<std::thread> pollers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> posted_{0};
};

}  // namespace ppspec::real
