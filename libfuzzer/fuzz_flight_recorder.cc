// Fuzz target: the Flight Recorder reader (JSON and pickle) and checker, as `ppspec check DIR` runs
// them (tools/check_command.cc). One input is the dumps of one job, rank 0's first, each after a
// separator line (kSeparator) but the first: at most kDumpsMax of them. Every input must give a
// verdict or be rejected with core::InputError; a crash, a sanitizer report, an internal error or
// any other exception is a bug (libfuzzer/README.md). The separator is a line that neither format needs,
// so that the fuzzer can cut, join and reorder whole dumps; inside a pickle it is just bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "traces/flight_recorder.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::fuzz {
namespace {

constexpr std::string_view kSeparator = "\n#ppspec-fr-next-rank#\n";
constexpr size_t kDumpsMax = 8;

// What check_command.cc's check_dumps reaches for a folder of dumps: each read as its rank's,
// the set checked to be of one run, then judged.
void check(std::string_view input) {
  std::vector<traces::FrDump> dumps;
  size_t begin = 0;
  while (dumps.size() < kDumpsMax) {
    const size_t end = input.find(kSeparator, begin);
    const std::string_view part =
        input.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    const int rank = static_cast<int>(dumps.size());
    dumps.push_back(traces::parse_fr_dump(std::string(part), "rank_" + std::to_string(rank), rank));
    if (end == std::string_view::npos) break;
    begin = end + kSeparator.size();
  }
  traces::resolve_inferred_groups(dumps);
  traces::check_fr_one_run(dumps);
  (void)verify::check_flight_recorder(dumps);
}

}  // namespace
}  // namespace ppspec::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ppspec::fuzz::check(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const ppspec::core::InputError&) {}
  return 0;
}
