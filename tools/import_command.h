// `ppspec import`: a real job's Flight Recorder dumps as a program scenario (scenario/importer/fr_import.h),
// with its [expect] set to what `ppspec run` gives on it, and the verdict `ppspec check` gives on the
// dumps beside it: the same verdict means the scenario reproduces the job's failure, so its other
// schedules (--seeds) and the user's edits can be tried on the simulator. A ppspec trace (a simulated
// or GPU run's, or a job's NCCL profiler plugin traces) is imported through the Flight Recorder dumps
// it exports (traces/fr_writer.h), keeping the streams it recorded, and checked as those dumps.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ppspec::tools {

struct ImportArgs {
  std::vector<std::string> inputs;  // a folder of dumps, or dump files one per rank; or one trace
  std::string out;                  // the scenario file to write
  std::string name;                 // the scenario's name (default: the output file's stem)
  std::string prefix;               // the dumps' file-name prefix (default: inferred)
  std::string calls = "sync";       // the execution model, as for check (verify/dumps/fr_streams.h)
  bool force = false;               // overwrite `out`
};

// Exit status: 0 written, and the scenario's run gives the dumps' verdict; 1 written, but the
// verdicts differ (both printed, and why that can be); 2 bad input (dumps, an unsupported
// operation, `out` already there without --force).
int import_command(const ImportArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
