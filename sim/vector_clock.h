// Happens-before for the R8 hazard rule (sim/blocking_hazards.h): a sparse vector clock over the
// host threads that own a component. Only the threads of ranks with two or more host threads own
// one (the only threads a module load's context lock can hold back, besides the caller itself), so
// in the usual world of one thread per rank every clock stays empty and costs nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ppspec::sim {

class VectorClock {
 public:
  // The component of host thread `thread` (a fiber id): how far this clock knows that thread.
  uint32_t get(uint32_t thread) const {
    for (const auto& [t, v] : entries_)
      if (t == thread) return v;
    return 0;
  }
  // The thread's own component moves on: it makes a runtime call.
  void bump(uint32_t thread) {
    for (auto& [t, v] : entries_)
      if (t == thread) {
        ++v;
        return;
      }
    insert(thread, 1);
  }
  void join(const VectorClock& o) {
    if (o.entries_.empty() || &o == this) return;
    if (entries_.empty()) {
      entries_ = o.entries_;
      return;
    }
    if (o.entries_.size() <= 2) {  // the usual case: a thread or two to raise in place
      for (const auto& [t, v] : o.entries_) raise(t, v);
      return;
    }
    merge(o);
  }
  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& entries() const { return entries_; }

 private:
  void raise(uint32_t thread, uint32_t value) {
    for (auto& [t, v] : entries_)
      if (t == thread) {
        if (v < value) v = value;
        return;
      }
    insert(thread, value);
  }
  // Linear in both sizes however many threads own components.
  void merge(const VectorClock& o) {
    // Merged into a scratch list that is then swapped in: the list given back keeps its capacity
    // for the next merge on this thread, so merging clocks of steady sizes allocates nothing.
    static thread_local std::vector<std::pair<uint32_t, uint32_t>> out;
    out.clear();
    out.reserve(entries_.size() + o.entries_.size());
    size_t i = 0, j = 0;
    while (i < entries_.size() || j < o.entries_.size()) {
      if (j == o.entries_.size() || (i < entries_.size() && entries_[i].first < o.entries_[j].first)) {
        out.push_back(entries_[i++]);
      } else if (i == entries_.size() || o.entries_[j].first < entries_[i].first) {
        out.push_back(o.entries_[j++]);
      } else {
        out.emplace_back(entries_[i].first, std::max(entries_[i].second, o.entries_[j].second));
        ++i;
        ++j;
      }
    }
    entries_.swap(out);
  }
  void insert(uint32_t thread, uint32_t value) {
    auto it = entries_.begin();
    while (it != entries_.end() && it->first < thread) ++it;
    entries_.insert(it, {thread, value});
  }
  // Sorted by thread: equal clocks compare equal entry by entry. A handful of entries (the
  // threads of the ranks that have several), so a linear scan beats a search.
  std::vector<std::pair<uint32_t, uint32_t>> entries_;
};

}  // namespace ppspec::sim
