#include "verify/dumps/fr_coalesced.h"

#include "core/assert.h"
#include "verify/dumps/fr_job.h"

namespace ppspec::verify {
namespace {

using traces::FrEntry;
using traces::FrKind;

enum class Mode : uint8_t { unknown, p2p, collectives };

// Whether `e` can be a member of the group `closer` closes, in `mode` (decided by the first member).
bool member(const FrEntry& e, const FrEntry& closer, Mode& mode) {
  if (traces::is_closer(e.kind)) return false;
  const bool p2p = e.is_p2p && e.p2p_seq_id == closer.p2p_seq_id;
  const bool coll = !e.is_p2p && e.collective_seq_id == closer.collective_seq_id;
  // Only `coalesced` closes p2p: the other two close an uneven all_gather's or reduce_scatter's
  // collectives.
  if (mode == Mode::unknown)
    mode = p2p && closer.kind == FrKind::coalesced ? Mode::p2p : coll ? Mode::collectives : Mode::unknown;
  return mode == Mode::p2p ? p2p : mode == Mode::collectives && coll;
}

}  // namespace

FrCoalescing coalesced_groups(const traces::FrDump& d) {
  const size_t n = d.entries.size();
  FrCoalescing c;
  c.state.resize(n);
  c.closer.assign(n, SIZE_MAX);
  c.members.resize(n);
  c.in_composite.assign(n, false);
  for (size_t i = 0; i < n; ++i) c.state[i] = d.entries[i].state;
  for (size_t i = 0; i < n; ++i) {
    const FrEntry& closer = d.entries[i];
    if (!traces::is_closer(closer.kind)) continue;
    Mode mode = Mode::unknown;
    std::vector<size_t> found;
    for (size_t j = i, looked = 0; j-- > 0 && looked < kFrCoalescedMembersMax; ++looked) {
      const FrEntry& e = d.entries[j];
      if (e.group != closer.group) continue;  // another thread's call on another group
      if (c.closer[j] != SIZE_MAX || !member(e, closer, mode)) break;
      found.push_back(j);
    }
    for (size_t j : found) {
      c.state[j] = closer.state;
      c.closer[j] = i;
      c.in_composite[j] = mode == Mode::collectives;
    }
    if (mode == Mode::collectives) c.members[i].assign(found.rbegin(), found.rend());
  }
  PPSPEC_ASSERT(c.state.size() == n && c.closer.size() == n && c.members.size() == n);
  return c;
}

}  // namespace ppspec::verify
