// Happens-before, a sparse vector clock over the fibers that own a component: for the R8 hazard
// rule (sim/blocking_hazards.h) the host threads of ranks with two or more, and with race
// detection (sim/race_detector.h) every stream and host thread. Without either, every clock stays
// empty and costs nothing. With race detection a clock has about ten components, and every work
// item carries a copy of its enqueuer's: up to kInline components live in the clock itself, so a
// copy is a few cache lines, not a heap block.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ppspec::sim {

class VectorClock {
 public:
  // Provided, not defaulted: a defaulted one would let value-initialisation (a work queue's
  // `T{}`, a vector's `emplace_back()`) zero the inline components, which size_ says are unused.
  VectorClock() {}  // NOLINT(modernize-use-equals-default)
  VectorClock(const VectorClock& o) { assign(o.view()); }
  VectorClock& operator=(const VectorClock& o) {
    if (&o != this) assign(o.view());
    return *this;
  }
  // A move copies inline components (as cheap as moving them) and takes spilled ones.
  VectorClock(VectorClock&& o) noexcept { take(o); }
  VectorClock& operator=(VectorClock&& o) noexcept {
    if (&o != this) take(o);
    return *this;
  }
  ~VectorClock() = default;

  // The component of fiber `thread`: how far this clock knows that thread.
  uint32_t get(uint32_t thread) const {
    for (const Entry& e : view())
      if (e.thread == thread) return e.value;
    return 0;
  }
  // The thread's own component moves on: it makes a runtime call.
  void bump(uint32_t thread) {
    for (Entry& e : view())
      if (e.thread == thread) {
        ++e.value;
        return;
      }
    insert(thread, 1);
  }
  void join(const VectorClock& o) {
    if (o.size_ == 0 || &o == this) return;
    if (size_ == 0) {
      assign(o.view());
      return;
    }
    if (o.size_ <= 2) {  // the usual case: a thread or two to raise in place
      for (const Entry& e : o.view()) raise(e.thread, e.value);
      return;
    }
    merge(o);
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  struct Entry {
    uint32_t thread;
    uint32_t value;
  };
  static constexpr uint32_t kInline = 12;

  // The components, sorted by thread (equal clocks compare equal entry by entry; a handful of
  // entries, so a linear scan beats a search): inline while they fit, else all in spill_.
  bool spilled() const { return size_ > kInline; }
  std::span<Entry> view() { return {spilled() ? spill_.data() : inline_.data(), size_}; }
  std::span<const Entry> view() const { return {spilled() ? spill_.data() : inline_.data(), size_}; }

  // (spill_ may keep stale entries while size_ <= kInline: they are never read.)
  void assign(std::span<const Entry> from) {
    size_ = static_cast<uint32_t>(from.size());
    if (!spilled())
      std::copy(from.begin(), from.end(), inline_.begin());
    else
      spill_.assign(from.begin(), from.end());
  }
  void take(VectorClock& o) {
    size_ = o.size_;
    if (!o.spilled())
      std::copy_n(o.inline_.begin(), size_, inline_.begin());
    else
      spill_ = std::move(o.spill_);
    o.size_ = 0;
  }
  void raise(uint32_t thread, uint32_t value) {
    for (Entry& e : view())
      if (e.thread == thread) {
        if (e.value < value) e.value = value;
        return;
      }
    insert(thread, value);
  }
  // Linear in both sizes however many threads own components. Usually every component of `o` is
  // one of this clock's already (the same streams and threads, met again): raised in place, no copy.
  void merge(const VectorClock& o) {
    const std::span<Entry> mine = view();
    size_t at = 0;
    for (const Entry& e : o.view()) {
      while (at < mine.size() && mine[at].thread < e.thread) ++at;
      // A thread this clock lacks: the general merge (raising is idempotent, so what was raised
      // here already comes out the same).
      if (at == mine.size() || mine[at].thread != e.thread) return merge_new(o);
      mine[at].value = std::max(mine[at].value, e.value);
      ++at;
    }
  }
  // The merge where `o` names threads this clock does not.
  void merge_new(const VectorClock& o) {
    // Merged into a scratch list on this thread, which keeps its capacity: merging allocates
    // nothing once the clocks' sizes are steady.
    static thread_local std::vector<Entry> out;
    out.clear();
    const std::span<const Entry> a = view();
    const std::span<const Entry> b = o.view();
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].thread < b[j].thread)) {
        out.push_back(a[i++]);
      } else if (i == a.size() || b[j].thread < a[i].thread) {
        out.push_back(b[j++]);
      } else {
        out.push_back(Entry{a[i].thread, std::max(a[i].value, b[j].value)});
        ++i;
        ++j;
      }
    }
    assign(out);
  }
  void insert(uint32_t thread, uint32_t value) {
    const std::span<Entry> v = view();
    const size_t at = static_cast<size_t>(
        std::find_if(v.begin(), v.end(), [thread](const Entry& e) { return e.thread >= thread; }) - v.begin());
    if (size_ < kInline) {
      std::copy_backward(inline_.begin() + at, inline_.begin() + size_, inline_.begin() + size_ + 1);
      inline_[at] = Entry{thread, value};
    } else {
      if (!spilled()) spill_.assign(inline_.begin(), inline_.begin() + size_);
      spill_.insert(spill_.begin() + static_cast<std::ptrdiff_t>(at), Entry{thread, value});
    }
    ++size_;
  }

  uint32_t size_ = 0;
  std::array<Entry, kInline> inline_;  // components 0..size_ while size_ <= kInline
  std::vector<Entry> spill_;           // every component once there are more
};

}  // namespace ppspec::sim
