#include "core/sequence_cause.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::core {

const char* to_string(CauseKind k) {
  switch (k) {
    case CauseKind::none: return "none";
    case CauseKind::surplus: return "surplus";
    case CauseKind::extra: return "extra";
    case CauseKind::missing: return "missing";
    case CauseKind::differs: return "differs";
    case CauseKind::shifted: return "shifted";
    case CauseKind::unresolved: return "unresolved";
  }
  return "?";
}

namespace {

using Positions = std::vector<size_t>;

Blame blame_of(CauseKind k) {
  switch (k) {
    case CauseKind::none: return Blame::none;
    case CauseKind::surplus: return Blame::surplus;
    case CauseKind::extra: return Blame::extra;
    case CauseKind::missing: return Blame::missing;
    case CauseKind::differs: return Blame::differs;
    case CauseKind::shifted: return Blame::shifted;
    case CauseKind::unresolved: return Blame::unresolved;
  }
  return Blame::unresolved;
}

// Operations of a lane before a position needed to call a repetition there unusual for it.
constexpr size_t kHabitMin = 1;
// Lanes split evenly at a position: one side's operation seen nowhere else is the odd one only
// where the others' recurs this often elsewhere. Between two lanes it tells nothing: a wrong dtype
// or size is as often a common one, which leaves the right operation the unique one.
constexpr size_t kRecurMin = 3;

// How far the lanes agree from `pos` (at most the window), and whether they all end there at once.
struct Run {
  size_t agree = 0;
  bool together = false;
  bool perfect() const { return together || agree == kCauseWindow; }
  size_t score() const { return perfect() ? kCauseWindow + 1 : agree; }
};

Run agree_run(const Sequences& s, const Positions& pos) {
  const size_t n = s.lanes();
  for (size_t k = 0;; ++k) {
    size_t ended = 0;
    for (size_t i = 0; i < n; ++i) ended += pos[i] + k >= s.length(i) ? 1 : 0;
    if (ended == n) return {k, true};
    if (ended > 0 || k == kCauseWindow) return {k, false};
    for (size_t i = 1; i < n; ++i)
      if (!s.same(0, pos[0] + k, i, pos[i] + k)) return {k, false};
  }
}

// The lanes at `pos` grouped by what they posted there, the largest group first (ties: lowest lane).
std::vector<std::vector<size_t>> classes_at(const Sequences& s, const Positions& pos) {
  std::vector<std::vector<size_t>> classes;
  for (size_t i = 0; i < s.lanes(); ++i) {
    auto same = std::find_if(classes.begin(), classes.end(), [&](const std::vector<size_t>& c) {
      return s.same(c.front(), pos[c.front()], i, pos[i]);
    });
    if (same == classes.end()) same = classes.insert(classes.end(), std::vector<size_t>{});
    same->push_back(i);
  }
  std::stable_sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return classes;
}

// Whole repeats of a pattern the lanes shared before the place they part, for a lane that leaves it
// there to be the one that deviates: a pattern read off a short history is as often a coincidence
// (two lanes, one skips the odd operation: the other seems to break the pattern).
constexpr size_t kPatternRepeatsBefore = 3;

// The smallest period (at most kCausePeriodMax) with which `lane` repeats itself around `p`, with
// at least two whole repeats in the window and kPatternRepeatsBefore before `p`; 0 when it does not.
size_t local_period(const Sequences& s, size_t lane, size_t from, size_t p) {
  const size_t reach = 3 * kCausePeriodMax;
  const size_t lo = std::max(from, p >= reach ? p - reach : 0);
  const size_t hi = std::min(s.length(lane), p + reach + 1);
  for (size_t period = 1;
       period <= kCausePeriodMax && 2 * period + 1 <= hi - lo && kPatternRepeatsBefore * period <= p - lo; ++period) {
    bool repeats = true;
    for (size_t i = lo + period; i < hi && repeats; ++i) repeats = s.same(lane, i, lane, i - period);
    if (repeats) return period;
  }
  return 0;
}

// Whether the lane may repeat itself at `p` by habit: it posted one operation twice in a row
// somewhere in the window before `p`, or the window holds too little of it to say it does not.
bool repeats_before(const Sequences& s, size_t lane, size_t from, size_t p) {
  const size_t lo = std::max(from + 1, p >= kCauseWindow ? p - kCauseWindow : 0);
  if (p + 1 < lo + kHabitMin) return true;
  for (size_t i = lo; i <= p; ++i)
    if (s.same(lane, i, lane, i - 1)) return true;
  return false;
}

// How often, in the window around `p`, the lane's operation at `p` occurs elsewhere on any lane.
size_t occurrences_elsewhere(const Sequences& s, size_t lane, size_t p, size_t from) {
  size_t n = 0;
  for (size_t j = 0; j < s.lanes(); ++j) {
    const size_t lo = std::max(from, p >= kCauseWindow ? p - kCauseWindow : 0);
    const size_t hi = std::min(s.length(j), p + kCauseWindow);
    for (size_t i = lo; i < hi; ++i)
      if (!(j == lane && i == p) && s.same(lane, p, j, i)) ++n;
  }
  return n;
}

struct Hypothesis {
  CauseKind kind;
  std::vector<size_t> culprits;
  Positions resume;
  Run run;
};

std::vector<Hypothesis> hypotheses(const Sequences& s, const Positions& p,
                                   const std::vector<std::vector<size_t>>& classes) {
  std::vector<Hypothesis> out;
  const size_t n = s.lanes();
  for (const std::vector<size_t>& c : classes) {
    auto in = [&](size_t i) { return std::find(c.begin(), c.end(), i) != c.end(); };
    Positions differs = p, extra = p, missing = p;
    for (size_t i = 0; i < n; ++i) {
      differs[i] += 1;
      (in(i) ? extra[i] : missing[i]) += 1;
    }
    out.push_back({CauseKind::differs, c, differs, agree_run(s, differs)});
    out.push_back({CauseKind::extra, c, extra, agree_run(s, extra)});
    out.push_back({CauseKind::missing, c, missing, agree_run(s, missing)});
  }
  return out;
}

// The lanes that are wrong by the evidence around `p`, and the words for it; empty when nothing tells.
std::pair<std::vector<size_t>, std::string> wrong_lanes(const Sequences& s, const Positions& p,
                                                        std::span<const size_t> from,
                                                        const std::vector<Hypothesis>& best) {
  std::vector<size_t> periodic, broken;
  size_t period = 0;
  for (size_t i = 0; i < s.lanes(); ++i) {
    const size_t lp = local_period(s, i, from[i], p[i]);
    (lp > 0 ? periodic : broken).push_back(i);
    if (lp > 0) period = period == 0 ? lp : std::min(period, lp);
  }
  if (!periodic.empty() && !broken.empty())
    return {broken, period == 1 ? std::string("breaks the pattern the other side keeps: all its operations alike")
                                : fmt::format("breaks the repeating pattern the other side keeps (every {} operations)",
                                              period)};
  // An operation posted twice in a row (a double post), where the other side did not repeat: the
  // extra one of a shift, or the odd one at a position — unless repeating is the lane's habit or
  // another lane repeats there too (then a repetition is consistent, not suspect).
  std::vector<size_t> repeated;
  for (const Hypothesis& h : best)
    if ((h.kind == CauseKind::extra || h.kind == CauseKind::differs) && h.culprits.size() == 1) {
      const size_t a = h.culprits.front();
      bool others_repeat = false;
      for (size_t b = 0; b < s.lanes(); ++b)
        others_repeat =
            others_repeat || (b != a && p[b] > from[b] && p[b] < s.length(b) && s.same(b, p[b], b, p[b] - 1));
      if (p[a] > from[a] && s.same(a, p[a], a, p[a] - 1) && !others_repeat &&
          !repeats_before(s, a, from[a], p[a] - 1) && std::find(repeated.begin(), repeated.end(), a) == repeated.end())
        repeated.push_back(a);
    }
  if (repeated.size() == 1) return {repeated, "the same operation twice in a row"};
  // Between two different operations at one position, the one seen nowhere else is the odd one (it
  // tells nothing between an extra and a skipped one: the operation in question is unique either way).
  const bool all_differ =
      std::all_of(best.begin(), best.end(), [](const Hypothesis& h) { return h.kind == CauseKind::differs; });
  std::vector<size_t> unique;
  bool others_recur = true;
  for (size_t i = 0; i < s.lanes() && all_differ; ++i) {
    const size_t n = occurrences_elsewhere(s, i, p[i], from[i]);
    if (n == 0)
      unique.push_back(i);
    else
      others_recur = others_recur && n >= kRecurMin;
  }
  if (unique.size() == 1 && s.lanes() > 2 && others_recur)
    return {unique, "posts what occurs nowhere else on the communicator"};
  return {{}, ""};
}

SequenceCause at_disagreement(const Sequences& s, const Positions& p, std::span<const size_t> from) {
  const size_t n = s.lanes();
  std::vector<Hypothesis> all = hypotheses(s, p, classes_at(s, p));
  size_t top = 0;
  for (const Hypothesis& h : all) top = std::max(top, h.run.score());
  std::vector<Hypothesis> best;
  for (Hypothesis& h : all)
    if (h.run.score() == top && (top > 0 || h.kind == CauseKind::differs)) best.push_back(std::move(h));
  // The fewest lanes blamed: among three or more members, the odd one out.
  size_t fewest = n;
  for (const Hypothesis& h : best) fewest = std::min(fewest, h.culprits.size());
  std::erase_if(best, [&](const Hypothesis& h) { return h.culprits.size() != fewest; });
  SequenceCause c;
  c.at = p;
  if (best.size() > 1) {
    const auto [wrong, why] = wrong_lanes(s, p, from, best);
    std::vector<Hypothesis> told;
    for (const Hypothesis& h : best)
      if (!wrong.empty() && h.culprits == wrong) told.push_back(h);
    if (told.size() == 1 || (!told.empty() && std::all_of(told.begin(), told.end(), [&](const Hypothesis& h) {
          return h.resume == told[0].resume;
        }))) {
      best = {told.front()};
      c.evidence = why;
    }
  }
  // The same lanes blamed by every explanation left: the simplest of them (a different operation,
  // then an extra one, then a skipped one).
  if (best.size() > 1 &&
      std::all_of(best.begin(), best.end(), [&](const Hypothesis& h) { return h.culprits == best[0].culprits; })) {
    const auto rank = [](CauseKind k) { return k == CauseKind::differs ? 0 : k == CauseKind::extra ? 1 : 2; };
    std::stable_sort(best.begin(), best.end(),
                     [&](const Hypothesis& a, const Hypothesis& b) { return rank(a.kind) < rank(b.kind); });
    best.resize(1);
  }
  if (c.evidence.empty() && fewest == 1 && n >= 3) c.evidence = "the odd one out: every other member agrees";
  if (best.size() == 1) {
    c.kind = best[0].kind;
    c.culprits = best[0].culprits;
    c.resume = best[0].resume;
    if (c.evidence.empty() && n >= 3 && fewest * 2 < n) c.evidence = "a minority of the members; the others agree";
    return c;
  }
  // Two lanes one apart, and nothing tells an extra operation on one from a skipped one on the other.
  if (n == 2) {
    for (const Hypothesis& h : best)
      if (h.kind == CauseKind::extra && top > 0) {
        c.kind = CauseKind::shifted;
        c.ahead = h.culprits;
        c.resume = h.resume;
        return c;
      }
    if (!best.empty() && best.front().kind == CauseKind::differs) {
      c.kind = CauseKind::differs;  // one of the two is wrong; nothing tells which
      c.resume = best.front().resume;
      return c;
    }
  }
  c.kind = CauseKind::unresolved;
  c.resume = p;
  for (size_t& r : c.resume) r += 1;
  return c;
}

// The lanes still going, as lanes of their own.
class Going final : public Sequences {
 public:
  Going(const Sequences& s, const std::vector<size_t>& lanes) : s_(s), lanes_(lanes) {}
  size_t lanes() const override { return lanes_.size(); }
  size_t length(size_t lane) const override { return s_.length(lanes_[lane]); }
  bool same(size_t a, size_t x, size_t b, size_t y) const override { return s_.same(lanes_[a], x, lanes_[b], y); }

 private:
  const Sequences& s_;
  const std::vector<size_t>& lanes_;
};

// Some lanes ended and the others disagree: the cause among those still going (the ended ones
// agreed as far as they went), its lanes mapped back; the ended ones resume where they ended.
SequenceCause among_going(const Sequences& s, const Positions& p, std::span<const size_t> from,
                          const std::vector<size_t>& going) {
  SequenceCause c;
  c.at = p;
  c.resume = p;
  if (going.size() < 2) {
    c.kind = CauseKind::unresolved;
    return c;
  }
  const Going sub(s, going);
  Positions sp, sf;
  for (size_t g : going) {
    sp.push_back(p[g]);
    sf.push_back(from[g]);
  }
  const SequenceCause inner = at_disagreement(sub, sp, sf);
  c.kind = inner.kind;
  c.evidence = inner.evidence;
  for (size_t k : inner.culprits) c.culprits.push_back(going[k]);
  for (size_t k : inner.ahead) c.ahead.push_back(going[k]);
  for (size_t k = 0; k < going.size(); ++k) c.resume[going[k]] = inner.resume[k];
  return c;
}

}  // namespace

SequenceCause first_cause(const Sequences& s, std::span<const size_t> from) {
  const size_t n = s.lanes();
  PPSPEC_ASSERT(n >= 2 && from.size() == n, "first_cause of {} lanes with {} start positions", n, from.size());
  Positions p(from.begin(), from.end());
  for (size_t i = 0; i < n; ++i)
    PPSPEC_ASSERT(p[i] <= s.length(i), "lane {} starts at {} past its length {}", i, p[i], s.length(i));
  for (;;) {
    std::vector<size_t> going;
    for (size_t i = 0; i < n; ++i)
      if (p[i] < s.length(i)) going.push_back(i);
    bool agree = !going.empty();
    for (size_t k = 1; k < going.size() && agree; ++k) agree = s.same(going[0], p[going[0]], going[k], p[going[k]]);
    if (going.size() == n && agree) {
      for (size_t& x : p) ++x;
      continue;
    }
    SequenceCause c;
    c.at = p;
    if (going.empty()) return c;  // none: every lane ended together
    if (going.size() < n && agree) {
      c.kind = CauseKind::surplus;
      c.ahead = going;
      c.resume = p;
      // Among three or more, the smaller side is the one that did something the others did not.
      if (n >= 3 && going.size() * 2 < n) {
        c.culprits = going;
        c.evidence = "a minority of the members posted more";
      } else if (n >= 3 && going.size() * 2 > n) {
        for (size_t i = 0; i < n; ++i)
          if (p[i] >= s.length(i)) c.culprits.push_back(i);
        c.evidence = "a minority of the members posted fewer";
      }
      return c;
    }
    if (going.size() < n) return among_going(s, p, from, going);  // some lanes ended; the others disagree
    return at_disagreement(s, p, from);
  }
}

Culprit culprit_of(const SequenceCause& c, std::span<const RankId> ranks, std::span<const int64_t> positions,
                   const std::string& comm, bool p2p) {
  Culprit out;
  if (c.culprits.size() != 1) return out;
  const size_t who = c.culprits.front();
  PPSPEC_ASSERT(who < ranks.size() && ranks.size() == positions.size(), "culprit lane {} of {}", who, ranks.size());
  out.rank = ranks[who];
  out.comm = comm;
  out.p2p = p2p;
  if (p2p) out.peer = ranks[1 - who];
  out.what = blame_of(c.kind);
  out.position = positions[who];
  if (c.kind == CauseKind::missing)
    for (size_t i = 0; i < ranks.size(); ++i)
      if (i != who && positions[i] >= 0) {
        out.position = positions[i];
        break;
      }
  return out;
}

}  // namespace ppspec::core
