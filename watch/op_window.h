// What `ppspec watch` keeps of a live job for the root-cause logic of `ppspec check`: each
// communicator's members, and each rank's most recent operations with their state, as a Flight
// Recorder keeps them (a ring per rank, PyTorch's default depth and more). A stall or the job's end
// turns the window into dumps, and check's analysis (verify/dumps) names the cause: the
// misalignment every later operation follows from, or the ranks' frontiers and who waits for whom
// across communicators. Bounded: an hour-long job keeps no more than the window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>

#include "core/event.h"
#include "core/verdict.h"
#include "traces/fr_writer.h"

namespace ppspec::watch {

inline constexpr size_t kWindowOps = 8192;  // per rank: 4x PyTorch's default TORCH_NCCL_TRACE_BUFFER_SIZE

class OpWindow final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;
  // The window as what dumps are made of (traces/fr_writer.h).
  const traces::FrRun& run() const { return run_; }
  uint64_t dropped() const { return dropped_; }  // operations that left a full window
  bool empty() const { return by_op_.empty() && dropped_ == 0; }
  // check's analysis of the window (verify/dumps/flight_recorder_check.h); a window with no
  // operation is a finding of its own, never a pass.
  core::RunResult analyse() const;

 private:
  traces::FrRun run_;
  std::map<int64_t, traces::FrPosted*> by_op_;  // open and recent operations by the job's op id
  uint64_t dropped_ = 0;
};

}  // namespace ppspec::watch
