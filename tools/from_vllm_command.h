// `ppspec from-vllm`: vLLM engine arguments (`vllm serve` flags, or a JSON / flat YAML config) as
// a serving scenario of the same shape (scenario/vllm_config/to_serving.h): every mapping printed, and every
// argument without a counterpart said. The scenario is written, read back, and run once.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ppspec::tools {

struct FromVllmArgs {
  std::string config;                  // a JSON or flat YAML config file ("" none)
  std::vector<std::string> vllm_args;  // `vllm serve` flags, after `--` (they win over the file's)
  std::string out;                     // the scenario file to write
  std::string name;                    // the scenario's name (default: the output file's stem)
  int requests = 0;                    // the workload's requests (0: twice the request slots, 8 to 64)
  std::string cuda_module_loading;     // the deployment's CUDA_MODULE_LOADING: "LAZY" or "EAGER" ("": LAZY)
  std::string space;                   // a fuzz space around the scenario to write too ("" none)
  bool force = false;                  // overwrite `out` (and `space`)
};

// Exit status: 0 written, and its run (seed 1) passes; 1 written, and its run fails (a finding, printed);
// 2 bad input (an argument of the wrong type or range, a misspelt name, `out` already there).
int from_vllm_command(const FromVllmArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
