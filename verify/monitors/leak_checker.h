// Nothing left behind: a request the engine core let go of holds nothing. An aborted request is
// scheduled no more once its abort arrived (its step in flight may still return); when serving
// ends, every KV block is free and every request that was given blocks was released. A leak is
// what a finished, aborted or preempted request still holds. The evidence is the engine core's
// ledger (blocks given, freed, requests released) and its batches.
#pragma once

#include <map>

#include "verify/monitors/block_ownership.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class LeakChecker final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;

 private:
  void check_batch(const core::Event& e);
  void check_end(const core::Event& e);

  BlockOwnership blocks_;
  std::map<int64_t, int64_t> aborted_at_;  // request -> the step its abort arrived at, until released
};

}  // namespace ppspec::verify
