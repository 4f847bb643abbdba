// The last operations each member posted on a communicator (a collective lane, or one direction of
// a p2p channel), so that a mismatched pairing can be judged as first_cause judges a recorded
// trace: with the positions around it, not the pair alone. Bounded: the oldest are dropped.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "core/op.h"
#include "core/sequence_cause.h"

namespace ppspec::core {

// Enough to look back as far as first_cause's evidence does, and ahead as far as it compares.
inline constexpr size_t kPostHistoryMax = 4 * kCauseWindow;

class PostHistory {
 public:
  // Movable, not copyable: the posts' labels point into this history's own names.
  PostHistory() = default;
  PostHistory(PostHistory&&) = default;
  PostHistory& operator=(PostHistory&&) = default;
  PostHistory(const PostHistory&) = delete;
  PostHistory& operator=(const PostHistory&) = delete;

  // Keeps its own copy of the label's name: an event's label may point into storage that lives
  // only as long as the event (a trace reader's line buffers). Names are kept once each (a
  // communicator's lanes carry a handful), so a post allocates nothing in the steady state.
  void push(const OpDesc& d) {
    const std::string& name = intern(d.label.name);
    // A ring: position p sits at p % kPostHistoryMax, so the oldest's slot takes the newest.
    if (posts_.size() < kPostHistoryMax) {
      posts_.push_back(d);
      posts_.back().label.name = name;
      return;
    }
    OpDesc& slot = posts_[static_cast<size_t>(end()) % kPostHistoryMax];
    slot = d;
    slot.label.name = name;
    ++first_;
  }
  int64_t first() const { return first_; }  // the position of the oldest kept
  int64_t end() const { return first_ + static_cast<int64_t>(posts_.size()); }
  const OpDesc& at(int64_t position) const {
    PPSPEC_ASSERT(position >= first_ && position < end(), "position {} outside [{}, {})", position, first_, end());
    return posts_[static_cast<size_t>(position) % kPostHistoryMax];
  }

 private:
  const std::string& intern(std::string_view name) {
    if (last_name_ != nullptr && *last_name_ == name) return *last_name_;
    auto it = names_.find(name);
    if (it == names_.end()) it = names_.emplace(name).first;
    last_name_ = &*it;
    return *it;
  }

  std::vector<OpDesc> posts_;                 // the ring; each label points into names_
  std::set<std::string, std::less<>> names_;  // a node never moves: the labels' views stay valid
  const std::string* last_name_ = nullptr;
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
