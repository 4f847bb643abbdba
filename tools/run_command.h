// `ppspec run FILE...`: runs scenarios, compares each verdict with its [expect], prints reports.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace ppspec::tools {

struct RunArgs {
  std::vector<std::string> files{};
  std::optional<uint64_t> seed{};
  std::optional<uint64_t> seeds{};
  std::optional<std::string> strategy{};
  std::string trace{};  // JSON Lines output path; empty: none
  bool json = false;
  bool verbose = false;                    // several seeds: every seed's report, not only the first unexpected one's
  std::string backend = "sim";             // sim | gpu
  std::optional<double> hang_timeout_s{};  // gpu: the watchdog's limit
};

// Exit status: 0 when every verdict met its expectation, 1 when one did not, 2 for bad input.
int run_command(const RunArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
