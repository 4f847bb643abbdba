// vLLM engine arguments as a ppspec serving scenario of the same shape (`ppspec from-vllm`): its
// topology, speculative decoding, scheduler limits, CUDA graph sizes, async scheduling and prefix
// caching, each mapped as vLLM reads it (its defaults where an argument is absent), and every
// argument without a counterpart said, never dropped silently; what vLLM refuses at start-up is
// refused with vLLM's words. The model and the workload are ppspec's own: a small deterministic
// model with the same parallel layout, and a stress workload that reaches every mechanism the
// deployment enables (stress_workload.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "scenario/serving_case.h"
#include "scenario/vllm_config/engine_args.h"

namespace ppspec::vllm_config {

struct Mapping {
  std::string vllm;      // "pipeline_parallel_size = 2", or "(default) enable_prefix_caching = true"
  std::string scenario;  // "[topology] pp = 2"
  std::string origin;    // where the argument was given ("vLLM argument 3 ('-pp')", "config.yaml:4"); "" for a default
};

struct Serving {
  scenario::ServingCase scenario;
  std::vector<Mapping> mapped;
  std::vector<std::string> no_counterpart;  // "gpu_memory_utilization = 0.9: ppspec's memory is ..."
};

// The vLLM whose settings are read: its defaults and refusals are this version's.
inline constexpr const char* kVllmModelled = "vLLM 0.20 and later (Model Runner V2)";

// What is not an engine argument but shapes the run: the workload's size, and the process's
// CUDA_MODULE_LOADING (CUDA's and PyTorch's default: lazy).
struct WorkloadChoice {
  int num_requests = 0;                               // 0: twice the request slots, at least 8, at most 64
  std::optional<core::ModuleLoading> module_loading;  // none: lazy, the default
};

// Throws core::InputError naming the argument and what was expected (a value of the wrong type or
// range, a method ppspec cannot draft with, a misspelt name: "did you mean ...").
Serving to_serving(const EngineArgs& args, const WorkloadChoice& workload = {});

// vLLM's engine argument names ppspec knows (mapped or said to have no counterpart), for "did you mean".
const std::vector<std::string>& known_names();

}  // namespace ppspec::vllm_config
