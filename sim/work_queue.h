// A stream's queue of work items: first in, first out, and an item keeps its address from the push
// to the pop (the stream executes its head in place while the host pushes behind it, and may block
// in the middle). Unlike std::deque, whose blocks hold two work items and are freed and allocated
// again as the queue moves along, popped items' slots are kept and reused: a stream that runs
// steadily allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/assert.h"

namespace ppspec::sim {

template <typename T>
class WorkQueue {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  T& front() {
    PPSPEC_ASSERT(count_ > 0);
    return *ring_[head_];
  }
  const T& front() const {
    PPSPEC_ASSERT(count_ > 0);
    return *ring_[head_];
  }
  const T& at(size_t i) const {
    PPSPEC_ASSERT(i < count_);
    return *ring_[(head_ + i) & (ring_.size() - 1)];
  }

  void push_back(T&& item) {
    if (count_ == ring_.size()) grow();
    std::unique_ptr<T>& slot = ring_[(head_ + count_) & (ring_.size() - 1)];
    if (slot == nullptr) slot = std::make_unique<T>();
    *slot = std::move(item);
    ++count_;
  }
  // The head's contents are destroyed now (what its body captured is released at the pop, as a
  // container's erase would); its slot waits, empty, for a later push.
  void pop_front() {
    PPSPEC_ASSERT(count_ > 0);
    *ring_[head_] = T{};
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
  }

 private:
  // Doubles the ring, the queued items first in order; their slots move, the items do not.
  void grow() {
    const size_t capacity = ring_.empty() ? 4 : ring_.size() * 2;
    std::vector<std::unique_ptr<T>> bigger(capacity);
    for (size_t i = 0; i < ring_.size(); ++i) bigger[i] = std::move(ring_[(head_ + i) & (ring_.size() - 1)]);
    ring_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<std::unique_ptr<T>> ring_;  // a power of two in size; slots past the queued items may hold spare items
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace ppspec::sim
