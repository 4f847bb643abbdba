// The operation numbers one rank used on one communicator, so that a number posted twice is refused
// (a trace written twice into one file, or edited), in memory bounded however long the job runs.
// The NCCL profiler plugin numbers a communicator's operations in the order they are recorded, so
// every number below `next` has been seen and only the numbers seen past a gap are kept. A gap that
// stays open while kAheadMax numbers pile up behind it is given up on: from then on a number below
// it is not checked (a duplicate there goes unseen; nothing valid is ever refused).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

namespace ppspec::traces {

class OpNumbers {
 public:
  static constexpr size_t kAheadMax = 4096;
  // Whether `n` was used already (as far as the bound lets it tell).
  bool used(uint64_t n) const { return n < next_ ? n >= checked_from_ : ahead_.contains(n); }
  void use(uint64_t n);

 private:
  void advance();
  uint64_t next_ = 0;          // every number below was used, from checked_from_ on
  uint64_t checked_from_ = 0;  // numbers below this one are no longer checked (a gap given up on)
  std::set<uint64_t> ahead_;   // used numbers past next_, at most kAheadMax
};

}  // namespace ppspec::traces
