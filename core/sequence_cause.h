// The first root cause where the members of one communicator disagree about its sequence of
// operations. NCCL pairs the k-th operation of every member with the k-th of every other (R3): one
// extra or skipped call shifts every later pairing, so a report of every mismatched position names
// one cause many times (PyTorch's analyzer does). This finds the first position where the lanes
// disagree and the single change that makes them agree again — one lane's extra operation, one
// lane's skipped operation, one lane's different operation — and which lane made it, with the
// evidence that told (the odd one out among three or more; the lane that breaks a repeating
// pattern; the same operation twice in a row). When nothing tells, it says so rather than guess.
//
// One decision for every place that judges a communicator's sequences: the simulator at a
// mismatched pairing, the checker of recorded traces, and the Flight Recorder checker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/verdict.h"

namespace ppspec::core {

// The members' sequences, as the caller holds them. Lane i has length(i) operations; same(i, a, j, b)
// says whether lane i's a-th and lane j's b-th operation would pair without a mismatch.
class Sequences {
 public:
  virtual ~Sequences() = default;
  virtual size_t lanes() const = 0;
  virtual size_t length(size_t lane) const = 0;
  virtual bool same(size_t lane_a, size_t a, size_t lane_b, size_t b) const = 0;
};

enum class CauseKind : uint8_t {
  none,        // every lane agrees with every other to its end, and all end together
  surplus,     // they agree as far as all of them go; `ahead` went further (extra, or the others skipped)
  extra,       // `culprits` posted an operation the others did not; the rest realign after it
  missing,     // `culprits` skipped an operation the others posted
  differs,     // `culprits` posted a different operation at the same position
  shifted,     // two lanes one apart: `ahead` posted one more here, or the other skipped one; nothing tells which
  unresolved,  // they disagree and no single extra, skipped or different operation explains it
};
const char* to_string(CauseKind k);

struct SequenceCause {
  CauseKind kind = CauseKind::none;
  std::vector<size_t> at;        // per lane: its operation at the disagreement (= its length when it has none)
  std::vector<size_t> culprits;  // the lanes blamed, when the evidence names them
  std::vector<size_t> ahead;     // surplus, shifted: the lanes that posted more
  std::vector<size_t> resume;    // per lane: where the lanes agree again (to look for the next cause)
  std::string evidence;          // how the culprits were told, in words ("" when none are named)
};

// Lanes agreeing after a realignment are compared this far at most: a cause is judged in time
// linear in the lanes' lengths (a shift that makes the next 64 agree is the cause).
inline constexpr size_t kCauseWindow = 64;
// The longest repeating pattern looked for (a serving step's operations on one group).
inline constexpr size_t kCausePeriodMax = 16;

// The first cause at or after positions `from` (one per lane). Needs at least two lanes.
SequenceCause first_cause(const Sequences& s, std::span<const size_t> from);

// The cause as a Culprit, where it names one lane: `ranks[i]` is lane i's rank and `positions[i]`
// the position (the communicator's numbering) of lane i's operation at `c.at[i]`, -1 if it has none.
// A skipped operation is where the others' is. For p2p, lane 0 holds the sends and lane 1 the receives.
Culprit culprit_of(const SequenceCause& c, std::span<const RankId> ranks, std::span<const int64_t> positions,
                   const std::string& comm, bool p2p);

}  // namespace ppspec::core
