// Reads a JSON Lines trace (ours, from the simulator or a GPU run) one event at a time, so that the
// checkers that run online run on a recorded trace too, in memory of one line plus a few bytes per
// operation whatever the trace's length. Every field is checked for its type and range: a trace is input, and bad input
// is an InputError with the file, the line and what was expected, never a silent conversion. Lines are checked against
// each other too: events in order (seq increasing), an operation's events naming its communicator, each operation
// posted once and before anything else happens to it, nothing after its completion but its pairing (an eager send
// completes before its receive is posted).
#pragma once

#include <cstdint>
#include <deque>
#include <fstream>
#include <istream>
#include <map>
#include <set>
#include <tuple>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/event.h"
#include "traces/trace_format.h"

namespace ppspec::traces {

class TraceReader {
 public:
  struct Options {
    // A trace read from a file must end with its trailer: without one the run was killed or the
    // file was cut, and checking what is left would report a truncated run as clean. A check of
    // lines still being recorded (a live GPU run) has no trailer yet.
    bool require_trailer = true;
  };

  // Opens the file and reads its header. Throws core::InputError.
  TraceReader(const std::string& path, Options options);
  // Reads lines from `in`; `where` names them in errors.
  TraceReader(std::istream& in, std::string where, Options options);
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const TraceHeader& header() const { return header_; }
  // The next event, or nullptr after the last one (the trailer, if any, is then read and checked).
  // The event's strings and integers stay valid until the next call.
  const core::Event* next();
  const std::optional<TraceTrailer>& trailer() const { return trailer_; }
  const std::string& where() const { return where_; }
  int line() const { return line_; }
  // Events from here on must be of ranks 0..ranks-1 (the scenario's; `what` names it in the error):
  // an event of another rank is refused at its line, not checked as the rank it is not.
  void limit_ranks(int ranks, std::string what);
  uint64_t events_read() const { return events_; }

 private:
  bool read_line(std::string& out);
  void read_header();
  void read_trailer(const std::string& text);
  void finish();
  void check_across_lines(const core::Event& e);
  void fill_position(core::Event& e);

  std::unique_ptr<std::ifstream> file_;
  std::istream* in_ = nullptr;
  std::string where_;
  Options options_;
  int ranks_ = 0;  // 0: not known
  std::string ranks_of_;
  int line_ = 0;
  uint64_t events_ = 0;
  bool done_ = false;
  TraceHeader header_;
  std::optional<TraceTrailer> trailer_;
  // What earlier lines said, for the checks across lines: events in order, every operation posted
  // once before its pairing, start, completion or pending report, only a pairing after its completion.
  std::optional<uint64_t> last_seq_;
  std::map<int64_t, int> posted_at_;  // op id -> the line that posted it
  std::set<int64_t> completed_;
  // The next position (cseq) of each (communicator, rank, peer, direction) — peer -1 and direction 0
  // for collectives — for a hand-written trace that leaves cseq out of its op_posted lines.
  std::map<std::tuple<std::string, int, int, int>, int64_t> next_position_;
  // The current event and the storage its views point into.
  core::Event event_;
  std::deque<std::string> strings_;
  std::vector<int64_t> ints_;
};

}  // namespace ppspec::traces
