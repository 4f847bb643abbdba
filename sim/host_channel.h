// Engine core <-> worker messages in the simulator: an unbounded FIFO whose receive blocks.
#pragma once

#include <any>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimHostChannel final : public core::HostChannel {
 public:
  SimHostChannel(World& world, std::string name) : world_(world), name_(std::move(name)) {}
  void send(std::any message) override;
  std::any recv() override;
  const std::string& name() const { return name_; }
  // The host threads that have sent on this channel, in order of their first send: whom a stuck
  // receiver waits for (the deadlock detector's edges).
  const std::vector<const Fiber*>& senders() const { return senders_; }

 private:
  void note_sender(const Fiber& f);

  World& world_;
  std::string name_;
  std::deque<std::any> queue_;
  std::deque<VectorClock> clocks_;  // each message's sender's clock (R8 hazards; empty while clocks are off)
  std::vector<const Fiber*> senders_;
  std::set<uint32_t> sender_ids_;  // the ids of senders_, for an O(log n) first-send check
  WaitList waiters_;
};

}  // namespace ppspec::sim
