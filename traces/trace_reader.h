// Reads a JSON Lines trace (ours, from the simulator or a GPU run) back into events, so that the
// checkers that run online can run on a recorded trace too.
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/event.h"

namespace ppspec::traces {

struct Trace {
  nlohmann::json header;
  nlohmann::json trailer;  // null when the run did not end normally (a hang dump has none)
  std::vector<core::Event> events;
  std::deque<std::string> strings;  // storage the events' string views point into
  std::deque<std::vector<int64_t>> int_lists;
};

// Throws core::InputError with the line of the first malformed record.
Trace read_trace(const std::string& path);
// The same for lines already in memory (`where` names them in errors).
Trace read_trace_lines(const std::vector<std::string>& lines, const std::string& where);

}  // namespace ppspec::traces
