// `ppspec watch`: checks a running NCCL job live, from the traces its ranks' profiler plugins
// write (NCCL_PROFILER_PLUGIN=libppspec_nccl_profiler.so, PPSPEC_WATCH=FOLDER or HOST:PORT):
// a misalignment as soon as its operation is posted, a stall after --stall seconds without
// progress (each rank's frontier, who waits for whom), and at the end the verdict `ppspec check`
// gives, with the job's merged trace for `check`, `show` and `export`.
#pragma once

#include <iosfwd>
#include <string>

namespace ppspec::tools {

struct WatchArgs {
  std::string dir;                   // a folder the ranks' plugins write into (PPSPEC_WATCH=FOLDER)
  std::string listen;                // or HOST:PORT to listen on (PPSPEC_WATCH=HOST:PORT)
  double stall_s = 10;               // no progress for this long is a stall
  bool abort = false;                // at the first finding, make the job fail now
  std::string out = "ppspec-watch";  // job.jsonl: the merged trace
  int ranks = 0;                     // the job's size, if known: the end waits until this many ranks ended
  double timeout_s = 0;              // stop watching after this long (0: when the job ends, or on a signal)
  bool json = false;
};

// Exit status: 0 the job ran clean, 1 a finding, 2 bad input (an address it cannot listen on, a
// folder it cannot read, a job that recorded nothing).
int watch_command(const WatchArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
