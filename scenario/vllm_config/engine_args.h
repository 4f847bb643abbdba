// vLLM's engine arguments as a user gives them: `vllm serve` flags (`--pipeline-parallel-size 2`,
// `-tp 2`, `--speculative-config '{...}'`, `--enforce-eager`, `--no-enable-prefix-caching`), or a
// config file (JSON, or the flat YAML `vllm serve --config` reads). Each value keeps where it came
// from, for the messages; names are vLLM's Python ones (dashes become underscores).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ppspec::vllm_config {

struct EngineArg {
  nlohmann::json value;
  std::string origin;  // "argv 3", "config.yaml:7"
};

struct EngineArgs {
  std::map<std::string, EngineArg> values;  // by vLLM's name: "pipeline_parallel_size"
  std::string model;                        // `vllm serve MODEL`'s positional, or `model`
};

// Bounds on what is read: a config is a screenful, not a dataset.
inline constexpr size_t kArgsMax = 1024;
inline constexpr size_t kConfigBytesMax = 1 << 20;

// Throws core::InputError naming the argument (or file and line) and what was expected.
EngineArgs parse_cli(const std::vector<std::string>& argv);
EngineArgs parse_config_file(const std::string& path);
// `over` wins, as flags given after `--config` do in vLLM.
void merge(EngineArgs& into, const EngineArgs& over);

}  // namespace ppspec::vllm_config
