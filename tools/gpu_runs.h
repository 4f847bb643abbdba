// `ppspec run --backend gpu` and `--backend both`: scenarios on this machine's GPUs, each in a
// child process (runs/gpu_jobs/gpu_backend.h), and the sim = GPU oracle (verify/oracles/backend_diff.h).
#pragma once

#include <iosfwd>
#include <vector>

#include "runs/gpu_jobs/gpu_backend.h"
#include "tools/run_command.h"
#include "tools/run_support.h"

namespace ppspec::tools {

// Exit status: 0 when every verdict met its expectation, 1 when one did not, 2 for bad input
// (a scenario this machine cannot run), 3 when a GPU run failed without a verdict.
int run_gpu(const std::vector<Loaded>& scenarios, const RunArgs& args, std::ostream& out, std::ostream& err);
// Serving scenarios only: each on the simulator (its first seed) and on GPUs, then compared.
int run_both(const std::vector<Loaded>& scenarios, const RunArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
