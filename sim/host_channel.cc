#include "sim/host_channel.h"

#include <algorithm>

namespace ppspec::sim {

void SimHostChannel::send(std::any message) {
  if (world_.in_fiber() && std::find(senders_.begin(), senders_.end(), &world_.current()) == senders_.end())
    senders_.push_back(&world_.current());
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
