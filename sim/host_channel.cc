#include "sim/host_channel.h"

namespace ppspec::sim {

void SimHostChannel::send(std::any message) {
  queue_.push_back(std::move(message));
  waiters_.wake_all(world_);
  world_.sleep(world_.jittered(world_.config().cost.host_call));
}

std::any SimHostChannel::recv() {
  while (queue_.empty()) waiters_.wait(world_, WaitInfo{.kind = WaitKind::channel, .what = "channel recv", .channel = this});
  std::any m = std::move(queue_.front());
  queue_.pop_front();
  world_.yield();
  return m;
}

}  // namespace ppspec::sim
