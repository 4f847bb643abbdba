// `ppspec show TRACE [--around N] [--ranks 0,1] [--rows R]`: a text timeline for a terminal, one
// column per rank's host thread and stream (a Flight Recorder folder: per rank and process group),
// around the N-th finding (default the first): what each column did just before the first wrong
// event and just after, row by row in time order, the finding's row marked.
#pragma once

#include <iosfwd>
#include <set>
#include <string>

namespace ppspec::tools {

struct ShowArgs {
  std::string input{};
  std::string scenario{};  // serving traces: as for `check`
  int around = 1;          // which finding, 1-based
  std::set<int> ranks{};   // empty: every rank
  int rows = 24;           // rows shown, about two thirds before the finding
  int width = 0;           // characters per column; 0: as wide as the widest cell shown (at most 60)
  int64_t step = -1;       // >= 0: centre on this engine step's first row instead of a finding
};

// Exit status: 0 shown, 2 bad input (no such finding, a malformed trace).
int show_command(const ShowArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
