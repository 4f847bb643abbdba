#include "core/post_history.h"

#include <algorithm>
#include <fmt/format.h>

namespace ppspec::core {
namespace {

class HistoryLanes final : public Sequences {
 public:
  HistoryLanes(std::span<const PostHistory* const> lanes, int64_t base) : lanes_(lanes), base_(base) {}
  size_t lanes() const override { return lanes_.size(); }
  size_t length(size_t lane) const override { return static_cast<size_t>(lanes_[lane]->end() - base_); }
  bool same(size_t a, size_t x, size_t b, size_t y) const override {
    return !mismatch_fields(desc(a, x), desc(b, y)).any();
  }
  const OpDesc& desc(size_t lane, size_t i) const { return lanes_[lane]->at(base_ + static_cast<int64_t>(i)); }

 private:
  std::span<const PostHistory* const> lanes_;
  int64_t base_;
};

std::string words_of(const SequenceCause& c, const HistoryLanes& s, std::span<const RankId> ranks, int64_t base,
                     bool p2p) {
  auto op = [&](size_t lane) {
    return c.at[lane] < s.length(lane) ? describe(s.desc(lane, c.at[lane])) : std::string("nothing");
  };
  const std::string why = c.evidence.empty() ? "" : fmt::format(" ({})", c.evidence);
  const char* unit = p2p ? "operation on the channel" : "collective";
  if (c.culprits.size() == 1) {
    const size_t who = c.culprits.front();
    const int64_t at = base + static_cast<int64_t>(c.at[who]);
    if (c.evidence == "the same operation twice in a row")
      // In the words `check` uses on the same bug's dumps: an extra operation, and which rank posted it.
      return fmt::format(
          "root cause: rank{} posted an extra {}, the same one twice in a row (#{} and #{}): a double post, so every "
          "later {} pairs with the wrong one",
          ranks[who], op(who), at - 1, at, unit);
    switch (c.kind) {
      case CauseKind::extra:
        return fmt::format("root cause: rank{} posted an extra {} (#{}){}; every later {} pairs with the wrong one",
                           ranks[who], op(who), at, why, unit);
      case CauseKind::missing:
        return fmt::format("root cause: rank{} skipped a {} at #{}{}; every later one pairs with the wrong one",
                           ranks[who], unit, at, why);
      default: return fmt::format("root cause: rank{}'s {} at #{} is the odd one{}", ranks[who], op(who), at, why);
    }
  }
  if (c.kind == CauseKind::shifted)
    return fmt::format(
        "rank{} posted one {} more than rank{} at #{} ({}), or rank{} skipped one: what was posted so far cannot tell "
        "which",
        ranks[c.ahead.front()], unit, ranks[1 - c.ahead.front()], base + static_cast<int64_t>(c.at[c.ahead.front()]),
        op(c.ahead.front()), ranks[1 - c.ahead.front()]);
  return "";
}

}  // namespace

MismatchCause mismatch_cause(std::span<const PostHistory* const> lanes, std::span<const RankId> ranks, int64_t k,
                             const std::string& comm, bool p2p) {
  // The members that posted position k (one that has not is the others' wait, not this cause),
  // from as far back as first_cause's evidence looks, where every one of them still holds it.
  std::vector<const PostHistory*> have;
  std::vector<RankId> who;
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i]->end() > k) {
      have.push_back(lanes[i]);
      who.push_back(ranks[i]);
    }
  MismatchCause out;
  if (have.size() < 2) return out;
  int64_t base = std::max<int64_t>(0, k - static_cast<int64_t>(kCauseWindow));
  for (const PostHistory* h : have) base = std::max(base, h->first());
  if (base > k) return out;
  const HistoryLanes s(have, base);
  const SequenceCause c = first_cause(s, std::vector<size_t>(have.size(), 0));
  std::vector<int64_t> positions;
  for (size_t i = 0; i < have.size(); ++i)
    positions.push_back(c.at[i] < s.length(i) ? base + static_cast<int64_t>(c.at[i]) : -1);
  out.culprit = culprit_of(c, who, positions, comm, p2p);
  out.words = words_of(c, s, who, base, p2p);
  return out;
}

void name_cause(Finding& f, MismatchCause c) {
  f.culprit = std::move(c.culprit);
  if (!c.words.empty()) f.details.insert(f.details.begin(), std::move(c.words));
}

}  // namespace ppspec::core
