// A bounded ring that NCCL's threads append to without a lock and the flusher drains: each cell
// carries a sequence number that says whose turn it is (the bounded MPMC queue of D. Vyukov,
// used here with one consumer). A full ring refuses the append, and the caller counts the loss:
// a callback never waits.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ppspec::nccl_profiler {

template <typename T, size_t Capacity>
class Ring {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "a power of two");

 public:
  Ring() {
    for (size_t i = 0; i < Capacity; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  bool try_push(const T& value) {
    size_t at = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[at & (Capacity - 1)];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto lag = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(at);
      if (lag == 0) {
        if (tail_.compare_exchange_weak(at, at + 1, std::memory_order_relaxed)) {
          cell.value = value;
          cell.sequence.store(at + 1, std::memory_order_release);
          return true;
        }
      } else if (lag < 0) {
        return false;  // full: the consumer has not freed this cell yet
      } else {
        at = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // The one consumer.
  bool try_pop(T& out) {
    Cell& cell = cells_[head_ & (Capacity - 1)];
    const size_t seq = cell.sequence.load(std::memory_order_acquire);
    if (static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(head_ + 1) < 0)
      return false;  // empty, or being written
    out = cell.value;
    cell.sequence.store(head_ + Capacity, std::memory_order_release);
    ++head_;
    return true;
  }

 private:
  struct alignas(64) Cell {
    std::atomic<size_t> sequence{0};
    T value{};
  };
  std::array<Cell, Capacity> cells_{};
  alignas(64) std::atomic<size_t> tail_{0};
  alignas(64) size_t head_ = 0;
};

}  // namespace ppspec::nccl_profiler
