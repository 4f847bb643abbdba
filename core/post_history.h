// The last operations each member posted on a communicator (a collective lane, or one direction of
// a p2p channel), so that a mismatched pairing can be judged as first_cause judges a recorded
// trace: with the positions around it, not the pair alone. Bounded: the oldest are dropped.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <utility>

#include "core/op.h"
#include "core/sequence_cause.h"

namespace ppspec::core {

// Enough to look back as far as first_cause's evidence does, and ahead as far as it compares.
inline constexpr size_t kPostHistoryMax = 4 * kCauseWindow;

class PostHistory {
 public:
  // Keeps its own copy of the label's name: an event's label may point into storage that lives
  // only as long as the event (a trace reader's line buffers).
  void push(const OpDesc& d) {
    posts_.emplace_back(d, std::string(d.label.name));  // a deque never moves its elements on push_back or pop_front
    if (posts_.size() > kPostHistoryMax) {
      posts_.pop_front();
      ++first_;
    }
  }
  int64_t first() const { return first_; }  // the position of the oldest kept
  int64_t end() const { return first_ + static_cast<int64_t>(posts_.size()); }
  const OpDesc& at(int64_t position) const { return posts_[static_cast<size_t>(position - first_)].desc; }

 private:
  struct Post {
    Post(const OpDesc& d, std::string name) : desc(d), label(std::move(name)) { desc.label.name = label; }
    Post(const Post& o) : Post(o.desc, o.label) {}  // desc.label points into its own label
    Post& operator=(const Post&) = delete;
    OpDesc desc;
    std::string label;
  };
  std::deque<Post> posts_;
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
