#include "sim/host_channel.h"
#include "core/assert.h"

namespace ppspec::sim {

void SimHostChannel::note_sender(const Fiber& f) {
  if (!senders_.empty() && senders_.back() == &f) return;  // the usual case: one sender
  if (sender_ids_.insert(f.id).second) senders_.push_back(&f);
  PPSPEC_ASSERT(senders_.size() == sender_ids_.size());
}

void SimHostChannel::send(std::any message) {
  if (world_.in_fiber()) note_sender(world_.current());
  queue_.push_back(std::move(message));
  const VectorClock* c = world_.host_clock();
  clocks_.push_back(c != nullptr ? *c : VectorClock{});
  // One message satisfies one receiver: waking every receiver made N sends to N waiting
  // receivers cost N^2 scheduling steps. The longest waiter goes first, as in a FIFO.
  waiters_.wake_one(world_);
  world_.sleep(world_.jittered(world_.config().cost.host_call));
}

std::any SimHostChannel::recv() {
  while (queue_.empty())
    waiters_.wait(world_, WaitInfo{.kind = WaitKind::channel, .what = "channel recv", .channel = this});
  std::any m = std::move(queue_.front());
  queue_.pop_front();
  PPSPEC_ASSERT(clocks_.size() == queue_.size() + 1);
  if (VectorClock* mine = world_.host_clock()) mine->join(clocks_.front());
  clocks_.pop_front();
  // A receiver that never waited may have taken the message a woken one was woken for; the woken
  // one waits again, and a message left behind passes its wake-up on, so none is stranded.
  if (!queue_.empty()) waiters_.wake_one(world_);
  world_.yield();
  return m;
}

}  // namespace ppspec::sim
