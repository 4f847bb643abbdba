// `ppspec fuzz`: property-based fuzzing of serving scenarios (scenario/fuzzer/campaign.h), its flags checked
// strictly: a malformed SPACE.toml, an empty range, --shard 3/2, --jobs 0 are exit 2 with the file,
// line or flag and the reason.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ppspec::tools {

struct FuzzArgs {
  std::string space{};   // SPACE.toml, or empty: the whole space
  std::string around{};  // a serving scenario: the space around it (scenario/fuzzer/around.h)
  std::string time{};    // "60", "60s", "5m", "1h"
  std::string cases{};
  std::string seed = "1";
  std::string shard{};  // "I/N"
  std::string jobs = "1";
  std::string out = "fuzz-out";
  std::string faults{};  // "stale_drafts,lazy_post_update"
  bool keep_going = false;
  bool force = false;  // replace the campaign files an earlier run left in --out
  std::string backend = "sim";
  std::vector<std::string> merge{};  // --merge DIR...: the --out folders of shards run apart
};

// Exit status: 0 no failure, 1 failures (each shrunk to a file in --out), 2 bad input, 3 internal error.
int fuzz_command(const FuzzArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
