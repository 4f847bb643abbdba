#include "traces/op_numbers.h"

#include "core/assert.h"

namespace ppspec::traces {

void OpNumbers::use(uint64_t n) {
  PPSPEC_ASSERT(!used(n), "operation number {} used twice", n);
  if (n < next_) return;  // below a gap given up on: nothing to keep
  if (n != next_) {
    ahead_.insert(n);
    if (ahead_.size() <= kAheadMax) return;
    // The oldest gap will not close: give it up, and check from the first number past it.
    next_ = *ahead_.begin();
    ahead_.erase(ahead_.begin());
    checked_from_ = next_;
  }
  advance();
}

void OpNumbers::advance() {
  for (;;) {
    ++next_;
    const auto it = ahead_.begin();
    if (it == ahead_.end() || *it != next_) return;
    ahead_.erase(it);
  }
}

}  // namespace ppspec::traces
