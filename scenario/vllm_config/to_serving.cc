#include "scenario/vllm_config/to_serving.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "core/did_you_mean.h"
#include "core/error.h"
#include "core/json_shown.h"
#include "core/printable.h"
#include "engine/config.h"
#include "scenario/vllm_config/capture_sizes.h"

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
      {"scheduling_policy", "ppspec schedules FCFS"},
      {"long_prefill_token_threshold", "not modelled"},
      {"max_num_partial_prefills", "not modelled"},
      {"disable_cascade_attn", "attention is ppspec's kernel's"},
      {"enable_dbo", "no dual-batch overlap is modelled"}};
  return why;
}

const std::vector<std::string>& mapped_names() {
  static const std::vector<std::string> names = {"pipeline_parallel_size",
                                                 "tensor_parallel_size",
                                                 "data_parallel_size",
                                                 "speculative_config",
                                                 "num_speculative_tokens",
                                                 "speculative_model",
                                                 "max_num_seqs",
                                                 "max_num_batched_tokens",
                                                 "enable_chunked_prefill",
                                                 "enable_prefix_caching",
                                                 "async_scheduling",
                                                 "enforce_eager",
                                                 "compilation_config",
                                                 "cuda_graph_sizes",
                                                 "max_model_len",
                                                 "block_size",
                                                 "num_gpu_blocks_override",
                                                 "seed"};
  return names;
}

// Reads arguments by name, each once, and keeps what it mapped.
class Reader {
 public:
  explicit Reader(const EngineArgs& args, Serving& out) : args_(args), out_(out) {}

  const EngineArg* get(const std::string& name) {
    used_.insert(name);
    const auto it = args_.values.find(name);
    return it == args_.values.end() ? nullptr : &it->second;
  }
  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) {
    const EngineArg* a = get(name);
    if (a == nullptr) return std::nullopt;
    return checked_integer(a->value, a->origin, name, lo, hi);
  }
  std::optional<bool> boolean(const std::string& name) {
    const EngineArg* a = get(name);
    if (a == nullptr) return std::nullopt;
    if (!a->value.is_boolean())
      throw core::InputError(a->origin, 0, fmt::format("{}: expected true or false, got {}", name, shown(a->value)));
    return a->value.get<bool>();
  }
  // The argument is the name `vllm` starts with ("speculative_config.method = ..." is speculative_config's).
  void map(std::string vllm, std::string scenario) {
    const std::string name = vllm.substr(0, vllm.find_first_of(" .="));
    const auto it = args_.values.find(name);
    std::string origin = it == args_.values.end() ? "" : it->second.origin;
    out_.mapped.push_back(Mapping{std::move(vllm), std::move(scenario), std::move(origin)});
  }
  void unmapped(std::string what) { out_.no_counterpart.push_back(std::move(what)); }
  bool used(const std::string& name) const { return used_.count(name) > 0; }

  static std::string shown(const Json& v) { return core::shown(v, 60); }
  static int64_t checked_integer(const Json& v, const std::string& origin, const std::string& name, int64_t lo,
                                 int64_t hi) {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw core::InputError(origin, 0,
                             fmt::format("{}: expected an integer in [{}, {}], got {}", name, lo, hi, shown(v)));
    return v.get<int64_t>();
  }

 private:
  const EngineArgs& args_;
  Serving& out_;
  std::set<std::string> used_;
};

void read_topology(Reader& r, scenario::ServingCase& c) {
  c.pp = static_cast<int>(r.integer("pipeline_parallel_size", 1, 64).value_or(1));
  c.tp = static_cast<int>(r.integer("tensor_parallel_size", 1, 64).value_or(1));
  c.dp = static_cast<int>(r.integer("data_parallel_size", 1, 16).value_or(1));
  r.map(fmt::format("pipeline_parallel_size = {}", c.pp), fmt::format("[topology] pp = {}", c.pp));
  r.map(fmt::format("tensor_parallel_size = {}", c.tp), fmt::format("[topology] tp = {}", c.tp));
  r.map(fmt::format("data_parallel_size = {}", c.dp), fmt::format("[topology] dp = {}", c.dp));
  // ppspec's model is sized to the layout asked for: a layer per stage at least, lanes that the TP
  // ranks split evenly (its default, 4 layers of 8 lanes, where they do).
  const engine::ModelConfig model;
  if (c.pp > model.layers) {
    c.layers = c.pp;
    r.map(fmt::format("pipeline_parallel_size = {}", c.pp),
          fmt::format("[model] layers = {} (a layer per stage)", c.layers));
  }
  if (model.lanes % c.tp != 0) {
    c.lanes = std::lcm(model.lanes, c.tp);
    r.map(fmt::format("tensor_parallel_size = {}", c.tp),
          fmt::format("[model] lanes = {} (split evenly over the TP ranks)", c.lanes));
  }
}

// vLLM's proposer methods: EAGLE and EAGLE-3 are ppspec's EAGLE, DFlash its DSpark; the others
// draft K tokens per request too, with another proposer, and are drafted with DSpark.
void read_method(Reader& r, const std::string& method, const std::string& origin, scenario::ServingCase& c) {
  if (method == "eagle" || method == "eagle3") {
    c.eagle = true;
    r.map(fmt::format("speculative_config.method = \"{}\"", method),
          "[spec] method = \"eagle\" (EAGLE-3's tapped layers)");
    if (method == "eagle")
      r.unmapped(
          "speculative_config.method = \"eagle\": EAGLE-1 drafts from the last hidden state; ppspec's EAGLE fuses "
          "three tapped layers (EAGLE-3)");
    return;
  }
  if (method == "dflash" || method == "dspark") {
    r.map(fmt::format("speculative_config.method = \"{}\"", method), "[spec] method = \"dspark\"");
    return;
  }
  static const std::set<std::string> others = {"ngram",  "medusa",       "mlp_speculator", "draft_model",
                                               "mtp",    "deepseek_mtp", "qwen3_next_mtp", "ernie_mtp",
                                               "suffix", "eagle_mtp"};
  if (!others.count(method))
    throw core::InputError(
        origin, 0,
        fmt::format("speculative_config.method: '{}' is not a vLLM proposer ppspec knows (eagle, eagle3, "
                    "dflash; ngram, medusa, mlp_speculator, draft_model, mtp, suffix draft as DSpark)",
                    core::printable(method, 40)));
  r.unmapped(
      fmt::format("speculative_config.method = \"{}\": no counterpart; the scenario drafts K tokens per request with "
                  "DSpark (one drafter forward per step)",
                  method));
}

void read_speculative(Reader& r, scenario::ServingCase& c) {
  const EngineArg* spec = r.get("speculative_config");
  const std::optional<int64_t> top_k = r.integer("num_speculative_tokens", 0, 16);
  if (const EngineArg* old = r.get("speculative_model"))
    r.unmapped(
        fmt::format("speculative_model = {}: the drafter's weights have no counterpart", Reader::shown(old->value)));
  if (spec == nullptr) {
    c.k = static_cast<int>(top_k.value_or(0));
    r.map(fmt::format("num_speculative_tokens = {}", c.k), fmt::format("[spec] k = {}", c.k));
    return;
  }
  if (!spec->value.is_object())
    throw core::InputError(
        spec->origin, 0,
        "speculative_config: expected a JSON object ({\"method\": ..., \"num_speculative_tokens\": K})");
  const Json& s = spec->value;
  if (!s.contains("num_speculative_tokens"))
    throw core::InputError(spec->origin, 0, "speculative_config: no num_speculative_tokens");
  c.k = static_cast<int>(Reader::checked_integer(s.at("num_speculative_tokens"), spec->origin,
                                                 "speculative_config.num_speculative_tokens", 0, 16));
  r.map(fmt::format("speculative_config.num_speculative_tokens = {}", c.k), fmt::format("[spec] k = {}", c.k));
  std::string method = s.contains("method") && s.at("method").is_string() ? s.at("method").get<std::string>() : "";
  const std::string model = s.contains("model") && s.at("model").is_string() ? s.at("model").get<std::string>() : "";
  if (method.empty()) {
    // vLLM infers the method from the draft model's name.
    std::string lower = model;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    method = lower.find("eagle3") != std::string::npos  ? "eagle3"
             : lower.find("eagle") != std::string::npos ? "eagle"
                                                        : "draft_model";
  }
  read_method(r, method, spec->origin, c);
  for (const auto& [key, value] : s.items()) {
    if (key == "num_speculative_tokens" || key == "method") continue;
    r.unmapped(fmt::format(
        "speculative_config.{} = {}: {}", key, Reader::shown(value),
        key == "model" ? "the drafter's weights: ppspec's drafter is its own, of the same method" : "no counterpart"));
  }
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
  r.map(fmt::format("{}max_num_seqs = {}", seqs ? "" : "(vLLM's default for `vllm serve`) ", seqs_per_engine),
        fmt::format("[serving] max_num_seqs = {} (ppspec's is the whole system's: {} per replica)", c.max_num_seqs,
                    seqs_per_engine));
  r.map(fmt::format("{}max_num_batched_tokens = {}", tokens ? "" : "(vLLM's default for `vllm serve`) ",
                    c.max_num_batched_tokens),
        fmt::format("[serving] max_num_batched_tokens = {}", c.max_num_batched_tokens));
  const std::optional<bool> chunked = r.boolean("enable_chunked_prefill");
  const std::optional<bool> caching = r.boolean("enable_prefix_caching");
  c.chunked_prefill = chunked.value_or(true);
  c.enable_prefix_caching = caching.value_or(true);
  r.map(fmt::format("{}enable_chunked_prefill = {}", chunked ? "" : "(vLLM V1's default) ", c.chunked_prefill),
        fmt::format("[serving] chunked_prefill = {}", c.chunked_prefill));
  r.map(fmt::format("{}enable_prefix_caching = {}", caching ? "" : "(vLLM V1's default) ", c.enable_prefix_caching),
        fmt::format("[serving] enable_prefix_caching = {}", c.enable_prefix_caching));
  if (r.boolean("async_scheduling").value_or(false)) {
    c.max_concurrent_batches = c.pp + 1;
    r.map("async_scheduling = true",
          fmt::format(
              "[serving] max_concurrent_batches = {} (pp + 1: a step scheduled while the one before it is in flight)",
              c.max_concurrent_batches));
  }
}

// compilation_config: a level (-O3), or an object whose graph sizes and mode are read.
void read_compilation(Reader& r, CaptureSizeInputs& in, bool& eager) {
  if (const EngineArg* old = r.get("cuda_graph_sizes")) {
    const Json list = old->value.is_array() ? old->value : Json::array({old->value});
    std::vector<int> sizes;
    for (const Json& v : list)
      sizes.push_back(static_cast<int>(Reader::checked_integer(v, old->origin, "cuda_graph_sizes", 1, 1 << 20)));
    in.given = sizes;
  }
  const EngineArg* cc = r.get("compilation_config");
  if (cc == nullptr) return;
  if (cc->value.is_number_integer()) {
    r.unmapped(
        fmt::format("compilation_config = {} (a torch.compile level): no counterpart", cc->value.get<int64_t>()));
    return;
  }
  if (!cc->value.is_object())
    throw core::InputError(cc->origin, 0, "compilation_config: expected a JSON object or a level");
  for (const auto& [key, value] : cc->value.items()) {
    if (key == "cudagraph_capture_sizes") {
      if (!value.is_array())
        throw core::InputError(cc->origin, 0, "compilation_config.cudagraph_capture_sizes: expected a list of sizes");
      std::vector<int> sizes;
      for (const Json& v : value)
        sizes.push_back(
            static_cast<int>(Reader::checked_integer(v, cc->origin, "cudagraph_capture_sizes", 1, 1 << 20)));
      in.given = sizes;
    } else if (key == "max_cudagraph_capture_size") {
      in.max_size =
          static_cast<int>(Reader::checked_integer(value, cc->origin, "max_cudagraph_capture_size", 1, 1 << 20));
    } else if (key == "cudagraph_mode" && value.is_string() && value.get<std::string>() == "NONE") {
      eager = true;
    } else {
      r.unmapped(fmt::format("compilation_config.{} = {}: no counterpart", key, Reader::shown(value)));
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
  r.map(len ? fmt::format("max_model_len = {}", c.max_model_len) : "(max_model_len: the model's)",
        fmt::format("[model] max_model_len = {}", c.max_model_len));
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

// ppspec's workload: enough requests to fill the request slots twice over (at most 64), prompts
// and outputs that fit max_model_len and, without chunked prefill, the token budget.
void choose_workload(const WorkloadChoice& w, scenario::ServingCase& c) {
  c.num_requests = w.num_requests > 0 ? w.num_requests : std::min(2 * c.max_num_seqs, 64);
  c.num_requests = std::max(c.num_requests, c.dp);
  c.prompt_min = 4;
  c.prompt_max =
      std::max(c.prompt_min, std::min({48, c.max_model_len / 4, c.chunked_prefill ? 48 : c.max_num_batched_tokens}));
  c.output_min = 4;
  c.output_max = std::max(c.output_min, std::min(32, c.max_model_len / 4));
  c.poisson = true;
  c.mean_gap_us = 200;
  c.temperature = 0.7;
  if (c.enable_prefix_caching && c.prompt_max >= 24) {
    // Two system prompts shared by the requests, so that the cache has something to reuse.
    c.prompt_min = 24;
    c.shared_prefix = 16;
    c.prefix_groups = 2;
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
  read_speculative(r, c);
  int seqs_per_engine = 0;
  read_limits(r, c, seqs_per_engine);
  read_graphs(r, c, seqs_per_engine);
  read_model(r, c);
  if (!args.model.empty()) r.unmapped(fmt::format("model = {}: {}", args.model, without_counterpart().at("model")));
  check_leftovers(args, r);
  choose_workload(workload, c);
  return out;
}

}  // namespace ppspec::vllm_config
