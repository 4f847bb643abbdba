// The last operations each member posted on a communicator (a collective lane, or one direction of
// a p2p channel), so that a mismatched pairing can be judged as first_cause judges a recorded
// trace: with the positions around it, not the pair alone. Bounded: the oldest are dropped.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>

#include "core/op.h"
#include "core/sequence_cause.h"

namespace ppspec::core {

// Enough to look back as far as first_cause's evidence does, and ahead as far as it compares.
inline constexpr size_t kPostHistoryMax = 4 * kCauseWindow;

class PostHistory {
 public:
  void push(const OpDesc& d) {
    descs_.push_back(d);
    if (descs_.size() > kPostHistoryMax) {
      descs_.pop_front();
      ++first_;
    }
  }
  int64_t first() const { return first_; }  // the position of the oldest kept
  int64_t end() const { return first_ + static_cast<int64_t>(descs_.size()); }
  const OpDesc& at(int64_t position) const { return descs_[static_cast<size_t>(position - first_)]; }

 private:
  std::deque<OpDesc> descs_;
  int64_t first_ = 0;
};

// The root cause of a mismatch at position `k` of these lanes (one history per lane, `ranks[i]` its
// rank), judged from up to kCauseWindow positions before it: a culprit when one is named, and the
// cause in words for the report ("" when the histories do not reach back to `k`).
struct MismatchCause {
  Culprit culprit;
  std::string words;
};
// The cause into the finding: its culprit, and its words as the first detail.
void name_cause(Finding& f, MismatchCause c);

MismatchCause mismatch_cause(std::span<const PostHistory* const> lanes, std::span<const RankId> ranks, int64_t k,
                             const std::string& comm, bool p2p);

}  // namespace ppspec::core
