// How a finding's culprit is to blame (core::Culprit::what): a closed set, named in reports and
// `--json` by its string (to_string). Programs compare culprits by it (`fidelity`'s differentials,
// `ppspec check` of exported dumps against the simulator's own verdict), never by prose.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/named_formatter.h"

namespace ppspec::core {

enum class Blame : uint8_t {
  none,          // nobody is blamed for anything in particular
  extra,         // it posted an operation the others did not (core/sequence_cause.h)
  missing,       // it skipped an operation the others posted
  differs,       // it posted a different operation at the same position
  surplus,       // the sequences agree as far as all go; it went further
  shifted,       // one lane one apart from the other; nothing tells which
  unresolved,    // no single extra, skipped or different operation explains the disagreement
  never_posted,  // it never posted the operation its partners wait for
  cycle,         // it is part of a wait-for cycle
  undated,       // a dump records no time to order its operations by
  dropped,       // its operation fell out of a Flight Recorder ring
  no_dump,       // the rank wrote no dump
  stalled,       // its operation started and never completed
  unbalanced,    // an all_to_all whose splits do not balance across the members
  count,         // a member posted a different count at the same position
};

std::string_view to_string(Blame b);
std::optional<Blame> parse_blame(std::string_view s);

}  // namespace ppspec::core

// A blame formats as its name.
template <>
struct fmt::formatter<ppspec::core::Blame> : ppspec::core::NamedFormatter<ppspec::core::Blame> {};
