#include "scenario/vllm_config/to_serving.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <optional>
#include <set>

#include "core/did_you_mean.h"
#include "core/error.h"
#include "core/json_shown.h"
#include "core/printable.h"
#include "engine/config.h"
#include "scenario/vllm_config/capture_sizes.h"
#include "scenario/vllm_config/reader.h"

namespace ppspec::vllm_config {
namespace {

using Json = nlohmann::json;

// Engine arguments that shape nothing ppspec models, and why (printed, never dropped silently).
const std::map<std::string, std::string>& without_counterpart() {
  static const std::map<std::string, std::string> why = {
      {"model", "ppspec serves its own small deterministic model with the same parallel layout"},
      {"tokenizer", "ppspec's model works on token ids"},
      {"dtype", "ppspec's kernels compute in fixed point, exactly"},
      {"quantization", "ppspec's kernels compute in fixed point, exactly"},
      {"kv_cache_dtype", "ppspec's KV cache holds its kernels' exact values"},
      {"gpu_memory_utilization", "the KV cache is sized by num_gpu_blocks_override, or to hold the workload"},
      {"swap_space", "preemption recomputes (vLLM V1's only mode); nothing is swapped"},
      {"cpu_offload_gb", "no offloading is modelled"},
      {"trust_remote_code", "no model code is loaded"},
      {"served_model_name", "no server"},
      {"host", "no server"},
      {"port", "no server"},
      {"api_key", "no server"},
      {"uvicorn_log_level", "no server"},
      {"disable_log_requests", "no server"},
      {"enable_log_requests", "no server"},
      {"disable_log_stats", "logging only"},
      {"download_dir", "no model files"},
      {"load_format", "no model files"},
      {"revision", "no model files"},
      {"tokenizer_mode", "ppspec's model works on token ids"},
      {"distributed_executor_backend", "every rank is a simulated process (or a GPU child process)"},
      {"enable_expert_parallel",
       "ppspec's drafter MoE is expert-parallel across the data-parallel replicas whenever dp > 1"},
      {"disable_custom_all_reduce", "ppspec's all-reduces are NCCL's"},
      {"max_logprobs", "no logprobs are returned"},
      {"generation_config", "sampling is ppspec's workload's"},
      {"enable_lora", "no adapters are modelled"},
      {"max_seq_len_to_capture", "CUDA graphs are sized by capture_sizes"},
      {"enable_sleep_mode", "not modelled"},
      {"enable_eplb", "expert placement is fixed (expert e on replica e % dp)"},
      {"limit_mm_per_prompt", "no multimodal inputs"},
      {"max_parallel_loading_workers", "no model files"},
      {"enable_auto_tool_choice", "no server"},
      {"tool_call_parser", "no server"},
      {"chat_template", "no server"},
      {"headless", "no server"},
      {"data_parallel_address", "one host"},
      {"data_parallel_rpc_port", "one host"},
      {"data_parallel_size_local", "one host"},
      {"data_parallel_backend", "one host"},
      {"hf_overrides", "no model files"},
      {"override_generation_config", "sampling is ppspec's workload's"},
      {"long_prefill_token_threshold", "not modelled"},
      {"max_num_partial_prefills", "not modelled"},
      {"disable_cascade_attn", "attention is ppspec's kernel's"},
      {"enable_dbo", "no dual-batch overlap is modelled"}};
  return why;
}

const std::vector<std::string>& mapped_names() {
  static const std::vector<std::string> names = {
      "pipeline_parallel_size",  "tensor_parallel_size",  "data_parallel_size", "speculative_config",
      "num_speculative_tokens",  "speculative_model",     "max_num_seqs",       "max_num_batched_tokens",
      "enable_chunked_prefill",  "enable_prefix_caching", "async_scheduling",   "enforce_eager",
      "compilation_config",      "cuda_graph_sizes",      "max_model_len",      "block_size",
      "num_gpu_blocks_override", "scheduling_policy",     "kv_transfer_config", "seed",
      "attention_backend"};
  return names;
}

void read_topology(Reader& r, scenario::ServingCase& c) {
  c.pp = static_cast<int>(r.integer("pipeline_parallel_size", 1, 64).value_or(1));
  c.tp = static_cast<int>(r.integer("tensor_parallel_size", 1, 64).value_or(1));
  c.dp = static_cast<int>(r.integer("data_parallel_size", 1, 16).value_or(1));
  r.map(fmt::format("pipeline_parallel_size = {}", c.pp), fmt::format("[topology] pp = {}", c.pp));
  r.map(fmt::format("tensor_parallel_size = {}", c.tp), fmt::format("[topology] tp = {}", c.tp));
  r.map(fmt::format("data_parallel_size = {}", c.dp), fmt::format("[topology] dp = {}", c.dp));
  scenario::size_model_to_topology(c);
  if (c.layers > 0)
    r.map(fmt::format("pipeline_parallel_size = {}", c.pp),
          fmt::format("[model] layers = {} (a layer per stage)", c.layers));
  if (c.lanes > 0)
    r.map(fmt::format("tensor_parallel_size = {}", c.tp),
          fmt::format("[model] lanes = {} (split evenly over the TP ranks)", c.lanes));
}

// vLLM's max_num_seqs and max_num_batched_tokens are per engine (per data-parallel replica);
// ppspec's are the whole system's, divided evenly among the replicas.
void read_limits(Reader& r, scenario::ServingCase& c, int& seqs_per_engine) {
  const std::optional<int64_t> seqs = r.integer("max_num_seqs", 1, 4096);
  const std::optional<int64_t> tokens = r.integer("max_num_batched_tokens", 1, 1 << 20);
  seqs_per_engine = static_cast<int>(seqs.value_or(256));
  if (seqs_per_engine * c.dp > 4096)
    throw core::InputError(r.get("max_num_seqs")->origin, 0,
                           "max_num_seqs x data_parallel_size: at most 4096 request slots");
  c.max_num_seqs = seqs_per_engine * c.dp;
  c.max_num_batched_tokens = static_cast<int>(tokens.value_or(8192));
  // vLLM's defaults are no choice of the deployment's: a space around the scenario draws them.
  if (!seqs) c.free.push_back(serving::FreeAxis::max_num_seqs);
  if (!tokens) c.free.push_back(serving::FreeAxis::max_num_batched_tokens);
  r.map(fmt::format("{}max_num_seqs = {}", seqs ? "" : "(vLLM's default for `vllm serve`) ", seqs_per_engine),
        fmt::format("[serving] max_num_seqs = {} (ppspec's is the whole system's: {} per replica)", c.max_num_seqs,
                    seqs_per_engine));
  r.map(fmt::format("{}max_num_batched_tokens = {}", tokens ? "" : "(vLLM's default for `vllm serve`) ",
                    c.max_num_batched_tokens),
        fmt::format("[serving] max_num_batched_tokens = {}", c.max_num_batched_tokens));
  const std::optional<bool> chunked = r.boolean("enable_chunked_prefill");
  const std::optional<bool> caching = r.boolean("enable_prefix_caching");
  c.chunked_prefill = chunked.value_or(true);
  r.map(fmt::format("{}enable_chunked_prefill = {}", chunked ? "" : "(vLLM V1's default) ", c.chunked_prefill),
        fmt::format("[serving] chunked_prefill = {}", c.chunked_prefill));
  if (!c.recurrent_layers.empty()) {
    c.enable_prefix_caching = false;
    r.unmapped(
        fmt::format("{}enable_prefix_caching = {}: ppspec caches no prefix of a recurrent layer's state; the "
                    "scenario runs without prefix caching",
                    caching ? "" : "(vLLM V1's default) ", caching.value_or(true)));
    return;
  }
  if (c.disaggregated) {
    c.enable_prefix_caching = false;
    r.unmapped(
        fmt::format("{}enable_prefix_caching = {}: the decode instance's own prefix hits beside the pulled "
                    "blocks are not modelled; the scenario runs without prefix caching",
                    caching ? "" : "(vLLM V1's default) ", caching.value_or(true)));
    return;
  }
  c.enable_prefix_caching = caching.value_or(true);
  r.map(fmt::format("{}enable_prefix_caching = {}", caching ? "" : "(vLLM V1's default) ", c.enable_prefix_caching),
        fmt::format("[serving] enable_prefix_caching = {}", c.enable_prefix_caching));
}

// vLLM's --scheduling-policy (SchedulerConfig.policy): "fcfs", its default and ppspec's, or
// "priority". Said only where given: the scenario's file says FCFS by saying nothing.
void read_scheduling_policy(Reader& r, scenario::ServingCase& c) {
  const EngineArg* a = r.get("scheduling_policy");
  if (a == nullptr) return;
  const std::string name = a->value.is_string() ? a->value.get<std::string>() : "";
  if (name != "fcfs" && name != "priority")
    throw core::InputError(
        a->origin, 0,
        fmt::format("scheduling_policy: expected one of fcfs, priority, got {}", Reader::shown(a->value)));
  c.scheduling_policy = name == "priority" ? engine::SchedulingPolicy::priority : engine::SchedulingPolicy::fcfs;
  r.map(fmt::format("scheduling_policy = {}", name), fmt::format("[serving] scheduling_policy = \"{}\"", name));
}

// vLLM's --attention-backend (AttentionConfig.backend): TRITON_MLA is modelled with its batch split
// into a decode and a prefill path (engine/attention_groups.h); every other backend as one causal
// varlen kernel, said where given.
void read_attention_backend(Reader& r, scenario::ServingCase& c) {
  const EngineArg* a = r.get("attention_backend");
  if (a == nullptr) return;
  if (!a->value.is_string() || a->value.get<std::string>().empty())
    throw core::InputError(a->origin, 0,
                           fmt::format("attention_backend: expected a backend's name (e.g. TRITON_MLA, FLASH_ATTN), "
                                       "got {}",
                                       Reader::shown(a->value)));
  const std::string name = a->value.get<std::string>();
  c.triton_mla = name == "TRITON_MLA";
  if (c.triton_mla)
    r.map("attention_backend = TRITON_MLA",
          "[model] attention = \"triton_mla\" (the batch split at the KV-cache group's reorder threshold)");
  else
    r.map(fmt::format("attention_backend = {}", name),
          "[model] attention = \"varlen\" (one causal kernel over every query row: ppspec models only TRITON_MLA's "
          "split)");
}

// Hybrid models, known by name: their recurrent (linear-attention, Mamba) layers in ppspec's
// model, in the same proportion and pattern (Qwen3-Next: three Gated DeltaNet layers to one of
// attention; Jamba: attention every 8 layers, at offset 4).
void read_model_name(Reader& r, const std::string& model, scenario::ServingCase& c) {
  std::string lower = model;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  struct Hybrid {
    const char* name;
    int period, attention_at;
  };
  static constexpr std::array kHybrids{Hybrid{"qwen3-next", 4, 3}, Hybrid{"jamba", 8, 4}};
  for (const Hybrid& h : kHybrids) {
    if (lower.find(h.name) == std::string::npos) continue;
    const int layers = c.layers > 0 ? c.layers : engine::ModelConfig{}.layers;
    for (int l = 0; l < layers; ++l)
      if (l % h.period != h.attention_at) c.recurrent_layers.push_back(l);
    r.map(fmt::format("model = {}", core::printable(model, 80)),
          fmt::format("[model] recurrent_layers = [{}] (a hybrid model: one attention layer in {})",
                      fmt::join(c.recurrent_layers, ", "), h.period));
    return;
  }
}

// The process's CUDA_MODULE_LOADING: lazy unless the deployment says otherwise (CUDA's default
// since 11.7; PyTorch sets LAZY when it is unset).
void read_module_loading(Reader& r, const WorkloadChoice& w, scenario::ServingCase& c) {
  c.module_loading = w.module_loading.value_or(core::ModuleLoading::lazy);
  const std::string value = c.module_loading == core::ModuleLoading::eager ? "EAGER" : "LAZY";
  r.map(fmt::format("{}CUDA_MODULE_LOADING = {}", w.module_loading ? "" : "(CUDA's and PyTorch's default) ", value),
        fmt::format("[runtime] module_loading = \"{}\"", core::to_string(c.module_loading)));
}

// What ppspec makes of each compilation_config field it does not map, and why.
std::string compilation_field_reason(const std::string& key, const Json& value) {
  if (key == "cudagraph_mode")
    return fmt::format("ppspec captures whole decode steps (FULL) at the capture sizes; {} is the nearest it runs",
                       value.is_string() ? core::printable(value.get<std::string>(), 40) : "this mode");
  static const std::set<std::string> compiler = {"level",
                                                 "mode",
                                                 "backend",
                                                 "use_inductor",
                                                 "custom_ops",
                                                 "splitting_ops",
                                                 "pass_config",
                                                 "compile_sizes",
                                                 "inductor_compile_config",
                                                 "inductor_passes",
                                                 "use_inductor_graph_partition",
                                                 "cudagraph_num_of_warmups",
                                                 "cudagraph_copy_inputs",
                                                 "cache_dir",
                                                 "debug_dump_path",
                                                 "compile_cache_save_format",
                                                 "full_cuda_graph",
                                                 "cudagraph_specialize_lora",
                                                 "use_cudagraph",
                                                 "compile_ranges_split_points",
                                                 "dynamic_shapes_config"};
  if (compiler.count(key)) return "torch.compile's: ppspec launches its own kernels, uncompiled";
  return "not a compilation_config field ppspec models; left out";
}

// --cuda-graph-sizes (vLLM's SchedulerConfig.cuda_graph_sizes until max_cudagraph_capture_size
// replaced it): one value N is "capture up to N", several are the list itself.
void read_cuda_graph_sizes(Reader& r, CaptureSizeInputs& in) {
  const EngineArg* old = r.get("cuda_graph_sizes");
  if (old == nullptr) return;
  const Json list = old->value.is_array() ? old->value : Json::array({old->value});
  std::vector<int> sizes;
  for (const Json& v : list)
    sizes.push_back(static_cast<int>(Reader::checked_integer(v, old->origin, "cuda_graph_sizes", 1, 1 << 20)));
  if (sizes.size() == 1) {
    in.max_size = sizes.front();
    r.map(fmt::format("cuda_graph_sizes = [{}]", sizes.front()),
          fmt::format("capture sizes up to {} (one value: vLLM's max_cudagraph_capture_size)", sizes.front()));
  } else {
    in.given = sizes;
  }
}

// compilation_config: a level (-O3), or an object whose graph sizes and mode are read.
void read_compilation(Reader& r, CaptureSizeInputs& in, bool& eager) {
  read_cuda_graph_sizes(r, in);
  const std::optional<Json> cc = r.object("compilation_config", "a JSON object or a level");
  if (!cc) return;
  const std::string origin = r.origin_of("compilation_config");
  if (cc->is_number_integer()) {
    r.unmapped(
        fmt::format("compilation_config = {} (a torch.compile level): ppspec launches its own kernels, "
                    "uncompiled",
                    cc->get<int64_t>()));
    return;
  }
  if (!cc->is_object()) throw core::InputError(origin, 0, "compilation_config: expected a JSON object or a level");
  for (const auto& [key, value] : cc->items()) {
    if (key == "cudagraph_capture_sizes") {
      if (!value.is_array())
        throw core::InputError(origin, 0, "compilation_config.cudagraph_capture_sizes: expected a list of sizes");
      std::vector<int> sizes;
      for (const Json& v : value)
        sizes.push_back(static_cast<int>(Reader::checked_integer(v, origin, "cudagraph_capture_sizes", 1, 1 << 20)));
      in.given = sizes;
    } else if (key == "max_cudagraph_capture_size") {
      in.max_size = static_cast<int>(Reader::checked_integer(value, origin, "max_cudagraph_capture_size", 1, 1 << 20));
    } else if (key == "cudagraph_mode" && value.is_string() && value.get<std::string>() == "NONE") {
      eager = true;
    } else {
      r.unmapped(fmt::format("compilation_config.{} = {}: {}", key, Reader::shown(value),
                             compilation_field_reason(key, value)));
    }
  }
}

void read_graphs(Reader& r, scenario::ServingCase& c, int seqs_per_engine) {
  CaptureSizeInputs in;
  bool eager = r.boolean("enforce_eager").value_or(false);
  read_compilation(r, in, eager);
  if (eager) {
    c.capture_sizes.clear();
    r.map("enforce_eager (or cudagraph_mode NONE)", "[serving] capture_sizes = [] (eager only)");
    return;
  }
  in.max_num_seqs = seqs_per_engine;
  in.max_num_batched_tokens = c.max_num_batched_tokens;
  in.k = c.k;
  const CaptureSizes sizes = capture_sizes(in);
  c.capture_sizes = sizes.sizes;
  r.map(in.given ? fmt::format("cudagraph_capture_sizes = [{}]", fmt::join(*in.given, ", "))
                 : "(vLLM's default graph sizes)",
        fmt::format("[serving] capture_sizes = [{}]", fmt::join(c.capture_sizes, ", ")));
  for (const std::string& n : sizes.notes) r.map("", n);
}

void read_model(Reader& r, scenario::ServingCase& c) {
  const std::optional<int64_t> len = r.integer("max_model_len", 8, 1 << 20);
  c.max_model_len = static_cast<int>(len.value_or(2048));
  if (!len) c.free.push_back(serving::FreeAxis::max_model_len);
  r.map(len ? fmt::format("max_model_len = {}", c.max_model_len)
            : "(max_model_len not given: vLLM takes the model's context length)",
        len ? fmt::format("[model] max_model_len = {}", c.max_model_len)
            : fmt::format("[model] max_model_len = {} (ppspec's model's limit, not the served model's)",
                          c.max_model_len));
  if (const std::optional<int64_t> b = r.integer("block_size", 1, 1024)) {
    c.block_size = static_cast<int>(*b);
    r.map(fmt::format("block_size = {}", *b), fmt::format("[model] block_size = {}", *b));
  }
  if (const std::optional<int64_t> n = r.integer("num_gpu_blocks_override", 2, 1 << 24)) {
    c.num_blocks = static_cast<int>(*n);
    r.map(fmt::format("num_gpu_blocks_override = {}", *n), fmt::format("[model] num_blocks = {}", *n));
  }
  if (const std::optional<int64_t> seed = r.integer("seed", 0, INT64_MAX)) {
    c.workload_seed = static_cast<uint64_t>(*seed);
    r.map(fmt::format("seed = {}", *seed), fmt::format("[workload] seed = {}", *seed));
  }
}

// Every argument neither mapped nor known to have no counterpart: a near miss of a known name is a
// typo, refused with its correction; anything else is said and left out.
void check_leftovers(const EngineArgs& args, Reader& r) {
  for (const auto& [name, arg] : args.values) {
    if (r.used(name)) continue;
    if (const auto it = without_counterpart().find(name); it != without_counterpart().end()) {
      r.unmapped(fmt::format("{} = {}: {}", name, Reader::shown(arg.value), it->second));
      continue;
    }
    if (const std::optional<std::string> near = core::closest_name(name, known_names()))
      throw core::InputError(arg.origin, 0,
                             fmt::format("'{}' is not a vLLM engine argument: did you mean '{}'?", name, *near));
    r.unmapped(fmt::format("{} = {}: not an engine argument ppspec knows; left out", name, Reader::shown(arg.value)));
  }
}

}  // namespace

const std::vector<std::string>& known_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = mapped_names();
    for (const auto& [name, why] : without_counterpart()) all.push_back(name);
    return all;
  }();
  return names;
}

Serving to_serving(const EngineArgs& args, const WorkloadChoice& workload) {
  Serving out;
  Reader r(args, out);
  scenario::ServingCase& c = out.scenario;
  read_topology(r, c);
  read_model_name(r, args.model, c);
  read_kv_transfer(r, c);
  const Proposer proposer = read_speculative(r, c);
  int seqs_per_engine = 0;
  read_limits(r, c, seqs_per_engine);
  read_async_scheduling(r, proposer, c);
  read_scheduling_policy(r, c);
  read_attention_backend(r, c);
  read_graphs(r, c, seqs_per_engine);
  read_model(r, c);
  read_module_loading(r, workload, c);
  if (!args.model.empty()) r.unmapped(fmt::format("model = {}: {}", args.model, without_counterpart().at("model")));
  check_leftovers(args, r);
  choose_workload(workload, c, out.mapped);
  return out;
}

}  // namespace ppspec::vllm_config
