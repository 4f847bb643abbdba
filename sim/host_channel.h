// Engine core <-> worker messages in the simulator: an unbounded FIFO whose receive blocks.
#pragma once

#include <any>
#include <deque>
#include <string>

#include "core/runtime.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimHostChannel final : public core::HostChannel {
 public:
  SimHostChannel(World& world, std::string name) : world_(world), name_(std::move(name)) {}
  void send(std::any message) override;
  std::any recv() override;
  const std::string& name() const { return name_; }

 private:
  World& world_;
  std::string name_;
  std::deque<std::any> queue_;
  WaitList waiters_;
};

}  // namespace ppspec::sim
