// `ppspec check INPUT...`: runs the checkers over recorded traces (simulator or GPU runs), and over
// PyTorch Flight Recorder dumps: a folder of them, or dump files named one by one (told from ppspec
// traces by their content), all the files named being one job.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "core/verdict.h"

namespace ppspec::tools {

struct CheckArgs {
  std::vector<std::string> traces{};
  std::string scenario{};      // the scenario file of serving traces; empty: the one each header names
  std::string prefix{};        // Flight Recorder dumps' file-name prefix (PREFIX + rank); empty: inferred
  std::string calls = "sync";  // Flight Recorder dumps' execution model: sync or async (verify/dumps/fr_streams.h)
  bool json = false;
};

// Exit status: 0 when every trace is clean, 1 when one has findings, 2 for bad input (then nothing
// is printed on `out`: a report over part of the input would read as a verdict on all of it).
int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err);

// The findings of one trace or one folder of Flight Recorder dumps, as `check` reports them (for
// `ppspec export`, which marks them on its timeline). Throws core::InputError.
core::RunResult check_path(const std::string& path, const std::string& scenario, std::ostream& err);

}  // namespace ppspec::tools
