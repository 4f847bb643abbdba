// `ppspec replay TRACE`: re-executes a recorded simulated run from its header (scenario file, seed,
// policy) and its recorded schedule (the trailer's decisions), writes the event stream again and
// proves it byte-identical to the recording. A difference is verdict `nondeterminism` (kind
// `replay-diverged`) with the first differing line of each; a scenario file that changed since the
// recording (its hash differs) is refused, exit 2, saying so.
#pragma once

#include <iosfwd>
#include <string>

namespace ppspec::tools {

struct ReplayArgs {
  std::string trace{};
  std::string scenario{};  // the scenario file, when it is not where the header says
};

// Exit status: 0 identical, 1 it differs, 2 bad input (a GPU trace, a missing or changed scenario).
int replay_command(const ReplayArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
