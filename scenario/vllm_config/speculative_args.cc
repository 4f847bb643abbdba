// speculative_config and async scheduling, as vLLM's SpeculativeConfig and VllmConfig settle them
// (vllm/config/speculative.py, vllm/config/vllm.py).
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/error.h"
#include "core/printable.h"
#include "engine/config.h"
#include "scenario/vllm_config/reader.h"

namespace ppspec::vllm_config {
namespace {

using Json = nlohmann::json;

// MTP's method names: vLLM renames every one "mtp" (SpeculativeConfig: "method `%s` is deprecated
// and replaced with mtp") and runs it through its EAGLE proposer.
bool is_mtp(const std::string& method) { return method == "mtp" || method.ends_with("_mtp"); }

// The proposers vLLM has that ppspec drafts as DSpark, and why that keeps the protocol: every one
// of them drafts K tokens per request on the last stage, relayed to the earlier stages.
const std::map<std::string, std::string>& drafted_as_dspark() {
  static const std::map<std::string, std::string> why = {
      {"ngram", "n-gram lookup in the prompt"}, {"ngram_gpu", "n-gram lookup in the prompt, on the GPU"},
      {"suffix", "suffix-tree lookup"},         {"medusa", "Medusa heads"},
      {"mlp_speculator", "an MLP speculator"},  {"draft_model", "a separate draft model"}};
  return why;
}

// What ppspec makes of each speculative_config field it does not map, and why.
const std::map<std::string, std::string>& spec_fields_without_counterpart() {
  static const std::map<std::string, std::string> why = {
      {"model", "the drafter's weights: ppspec's drafter is its own, of the same method"},
      {"draft_tensor_parallel_size", "ppspec's drafter runs on the last stage's TP ranks, as vLLM's does by default"},
      {"prompt_lookup_max", "n-gram lookup: ppspec's drafter proposes from its own model"},
      {"prompt_lookup_min", "n-gram lookup: ppspec's drafter proposes from its own model"},
      {"disable_padded_drafter_batch",
       "ppspec's drafter always runs the padded batch; what this setting does to async scheduling is modelled"},
      {"max_model_len", "ppspec's drafter shares the target's max_model_len"},
      {"enforce_eager", "ppspec's drafter is launched as its target is (capture_sizes)"},
      {"quantization", "ppspec's kernels compute in fixed point, exactly"},
      {"revision", "no model files"},
      {"code_revision", "no model files"},
      {"draft_sample_method", "ppspec's drafter samples greedily from its own model"},
      {"disable_by_batch_size", "ppspec drafts at every batch size"},
      {"speculative_token_tree", "ppspec drafts a chain of K tokens, not a tree"},
      {"parallel_drafting", "ppspec's drafter proposes the K tokens as its method does"}};
  return why;
}

// The method named, or inferred from the draft model's name as vLLM does.
std::string method_of(const Json& s) {
  if (s.contains("method") && s.at("method").is_string()) return s.at("method").get<std::string>();
  std::string lower = s.contains("model") && s.at("model").is_string() ? s.at("model").get<std::string>() : "";
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower.find("eagle3") != std::string::npos) return "eagle3";
  if (lower.find("eagle") != std::string::npos) return "eagle";
  return "draft_model";
}

// vLLM's proposers as ppspec's drafters: EAGLE-3 is ppspec's EAGLE with its three tapped layers;
// EAGLE-1 and MTP draft from the last hidden state, ppspec's EAGLE with the last layer tapped;
// DFlash is its DSpark; the others draft K tokens per request with another proposer, as DSpark.
std::string read_method(Reader& r, std::string method, const std::string& origin, scenario::ServingCase& c) {
  const int last = (c.layers > 0 ? c.layers : engine::ModelConfig{}.layers) - 1;
  const std::string given = fmt::format("speculative_config.method = \"{}\"", method);
  if (method == "eagle3") {
    c.eagle = true;
    r.map(given, "[spec] method = \"eagle\" (EAGLE-3: three tapped layers, fused)");
  } else if (method == "eagle" || is_mtp(method)) {
    c.eagle = true;
    c.taps = {last};
    r.map(given, fmt::format("[spec] method = \"eagle\", taps = [{}] ({} drafts through vLLM's EAGLE proposer from "
                             "the last stage's last hidden state)",
                             last, method == "eagle" ? "EAGLE-1" : "MTP"));
    if (is_mtp(method) && method != "mtp")
      r.map("", fmt::format("vLLM renames method \"{}\" \"mtp\" (SpeculativeConfig)", method));
    if (is_mtp(method)) method = "mtp";
  } else if (method == "dflash" || method == "dspark") {
    r.map(given, "[spec] method = \"dspark\"");
  } else if (const auto it = drafted_as_dspark().find(method); it != drafted_as_dspark().end()) {
    r.map(given, "[spec] method = \"dspark\"");
    r.unmapped(
        fmt::format("{}: {} has no counterpart; ppspec drafts the K tokens with DSpark, whose protocol is "
                    "the same (drafted on the last stage, relayed to the others, verified in one block)",
                    given, it->second));
  } else {
    throw core::InputError(
        origin, 0,
        fmt::format("speculative_config.method: '{}' is not a vLLM proposer ppspec knows (eagle, eagle3, mtp and "
                    "its *_mtp aliases, dflash, dspark; ngram, ngram_gpu, suffix, medusa, mlp_speculator, "
                    "draft_model drafted as DSpark)",
                    core::printable(method, 40)));
  }
  return method;
}

}  // namespace

Proposer read_speculative(Reader& r, scenario::ServingCase& c) {
  const std::optional<Json> spec =
      r.object("speculative_config", "a JSON object ({\"method\": ..., \"num_speculative_tokens\": K})");
  const std::optional<int64_t> top_k = r.integer("num_speculative_tokens", 0, 16);
  if (const EngineArg* old = r.get("speculative_model"))
    r.unmapped(fmt::format("speculative_model = {}: the drafter's weights: ppspec's drafter is its own",
                           Reader::shown(old->value)));
  if (!spec) {
    c.k = static_cast<int>(top_k.value_or(0));
    r.map(fmt::format("num_speculative_tokens = {}", c.k), fmt::format("[spec] k = {}", c.k));
    return {};
  }
  Proposer p;
  p.origin = r.origin_of("speculative_config");
  if (!spec->is_object())
    throw core::InputError(
        p.origin, 0, "speculative_config: expected a JSON object ({\"method\": ..., \"num_speculative_tokens\": K})");
  const Json& s = *spec;
  if (!s.contains("num_speculative_tokens"))
    throw core::InputError(p.origin, 0, "speculative_config: no num_speculative_tokens");
  c.k = static_cast<int>(Reader::checked_integer(s.at("num_speculative_tokens"), p.origin,
                                                 "speculative_config.num_speculative_tokens", 0, 16));
  r.map(fmt::format("speculative_config.num_speculative_tokens = {}", c.k), fmt::format("[spec] k = {}", c.k));
  p.method = read_method(r, method_of(s), p.origin, c);
  if (s.contains("disable_padded_drafter_batch")) {
    const Json& v = s.at("disable_padded_drafter_batch");
    if (!v.is_boolean())
      throw core::InputError(
          p.origin, 0,
          fmt::format("speculative_config.disable_padded_drafter_batch: expected true or false, got {}",
                      Reader::shown(v)));
    p.disable_padded_drafter_batch = v.get<bool>();
  }
  for (const auto& [key, value] : s.items()) {
    if (key == "num_speculative_tokens" || key == "method") continue;
    const auto it = spec_fields_without_counterpart().find(key);
    r.unmapped(fmt::format("speculative_config.{} = {}: {}", key, Reader::shown(value),
                           it != spec_fields_without_counterpart().end()
                               ? it->second
                               : "not a speculative_config field ppspec models; left out"));
  }
  return p;
}

void read_async_scheduling(Reader& r, const Proposer& p, scenario::ServingCase& c) {
  const std::optional<bool> asked = r.boolean("async_scheduling");
  // VllmConfig's lists: the EAGLE kinds (EAGLE, EAGLE-3, MTP, DFlash), n-gram on the GPU and DSpark
  // take async scheduling by default; a draft model only when asked.
  const bool eagle_kind = p.method == "eagle" || p.method == "eagle3" || p.method == "mtp" || p.method == "dflash";
  const bool by_default = p.method.empty() || eagle_kind || p.method == "ngram_gpu" || p.method == "dspark";
  const bool allowed = by_default || p.method == "draft_model";
  bool on = false;
  std::string why;
  if (asked.value_or(false)) {
    const std::string origin = r.origin_of("async_scheduling");
    if (!allowed)
      throw core::InputError(
          origin, 0,
          fmt::format("async_scheduling with speculative_config.method = \"{}\": vLLM refuses this at start-up "
                      "(\"Currently, async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU/DSpark "
                      "kind of speculative decoding\", vllm/config/vllm.py)",
                      p.method));
    if (p.disable_padded_drafter_batch)
      throw core::InputError(
          origin, 0,
          "async_scheduling with speculative_config.disable_padded_drafter_batch = true: vLLM refuses "
          "this at start-up (\"Async scheduling is not compatible with "
          "disable_padded_drafter_batch=True.\", vllm/config/vllm.py)");
    on = true;
  } else if (!asked) {
    on = by_default && !p.disable_padded_drafter_batch;
    why = on ? "(vLLM's default: on where the proposer allows it) "
             : fmt::format("(vLLM's default: off {}) ", p.disable_padded_drafter_batch
                                                            ? "with disable_padded_drafter_batch"
                                                            : fmt::format("with method \"{}\"", p.method));
  }
  if (!on) {
    r.map(
        fmt::format("{}async_scheduling = false", why),
        fmt::format("[serving] max_concurrent_batches not set (pp = {} batches in flight: no lookahead batch)", c.pp));
    return;
  }
  c.max_concurrent_batches = c.pp + 1;
  r.map(fmt::format("{}async_scheduling = true", why),
        fmt::format("[serving] max_concurrent_batches = {} (pp + 1: a step scheduled while the one before it is in "
                    "flight)",
                    c.max_concurrent_batches));
}

}  // namespace ppspec::vllm_config
