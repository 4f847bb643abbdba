#include "scenario/vllm_config/engine_args.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/json_depth.h"
#include "core/utf8.h"
#include "core/printable.h"

namespace ppspec::vllm_config {
namespace {

using Json = nlohmann::json;

// `vllm serve` flags that take no value (store_true, or BooleanOptionalAction with its --no-).
const std::set<std::string>& boolean_flags() {
  static const std::set<std::string> flags = {"enforce_eager",
                                              "async_scheduling",
                                              "enable_prefix_caching",
                                              "enable_chunked_prefill",
                                              "trust_remote_code",
                                              "disable_log_stats",
                                              "enable_expert_parallel",
                                              "disable_custom_all_reduce",
                                              "enable_lora",
                                              "disable_log_requests",
                                              "enable_log_requests",
                                              "enable_sleep_mode",
                                              "disable_sliding_window",
                                              "skip_tokenizer_init",
                                              "enable_eplb",
                                              "enable_dbo",
                                              "headless",
                                              "disable_cascade_attn",
                                              "enable_auto_tool_choice",
                                              "enable_prompt_tokens_details"};
  return flags;
}

const std::map<std::string, std::string>& short_names() {
  static const std::map<std::string, std::string> names = {{"tp", "tensor_parallel_size"},
                                                           {"pp", "pipeline_parallel_size"},
                                                           {"dp", "data_parallel_size"},
                                                           {"O", "compilation_config"},
                                                           {"q", "quantization"}};
  return names;
}

std::string python_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Refuses a JSON text nested too deeply for any recursion over its value (core/json_depth.h).
// `key` names the value's setting, where the text is one setting's value.
void refuse_deep(const std::string& text, const std::string& origin, const std::string& key = "") {
  const auto deep = core::json_too_deep(text);
  if (!deep) return;
  std::string at = deep->path;
  if (!key.empty()) at = key + (at == "the top level" ? "" : at.starts_with("[") ? at : "." + at);
  throw core::InputError(origin, 0,
                         fmt::format("a value nested more than {} deep at {} (byte {}): not a vLLM setting",
                                     core::kJsonDepthMax, core::printable(at, 120), deep->byte));
}

// A value as vLLM's argparse types would read it: JSON where it parses (numbers, booleans, the JSON
// of --speculative-config), the text otherwise.
Json value_of(const std::string& text, const std::string& origin, const std::string& key) {
  refuse_deep(text, origin, key);
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Json(text);
  return j;
}

bool is_option(const std::string& token) {
  if (token.size() < 2 || token[0] != '-') return false;
  return !(std::isdigit(static_cast<unsigned char>(token[1])) || token[1] == '.');  // -1 is a value
}

void put(EngineArgs& args, const std::string& name, Json value, std::string origin) {
  if (args.values.size() >= kArgsMax && !args.values.count(name))
    throw core::InputError(origin, 0, fmt::format("more than {} engine arguments", kArgsMax));
  args.values[name] = EngineArg{std::move(value), std::move(origin)};
}

// One option at argv[i] (and the values it takes); returns the index of the next token.
size_t read_option(const std::vector<std::string>& argv, size_t i, EngineArgs& args) {
  const std::string& token = argv[i];
  const std::string origin = fmt::format("vLLM argument {} ('{}')", i + 1, core::printable(token, 60));
  const bool dashes = token.starts_with("--");
  std::string name = token.substr(dashes ? 2 : 1);
  std::optional<std::string> inline_value;
  if (const size_t eq = name.find('='); eq != std::string::npos) {
    inline_value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  if (!dashes) {
    // -O3 and -tp 2: a short option, its value attached or next.
    if (name.size() > 1 && name[0] == 'O' && !inline_value) inline_value = name.substr(1), name = "O";
    const auto it = short_names().find(name);
    if (it == short_names().end())
      throw core::InputError(origin, 0,
                             "not a `vllm serve` option ppspec knows (short options: -tp, -pp, -dp, -O, -q)");
    name = it->second;
  }
  name = python_name(name);
  if (name.empty()) throw core::InputError(origin, 0, "an option without a name");
  if (inline_value) {
    put(args, name, value_of(*inline_value, origin, name), origin);
    return i + 1;
  }
  if (name.starts_with("no_") && boolean_flags().count(name.substr(3))) {
    put(args, name.substr(3), false, origin);
    return i + 1;
  }
  if (boolean_flags().count(name) || i + 1 == argv.size() || is_option(argv[i + 1])) {
    put(args, name, true, origin);
    return i + 1;
  }
  if (name == "cuda_graph_sizes") {  // nargs="+"
    Json list = Json::array();
    size_t j = i + 1;
    for (; j < argv.size() && !is_option(argv[j]); ++j) list.push_back(value_of(argv[j], origin, name));
    put(args, name, list, origin);
    return j;
  }
  put(args, name, value_of(argv[i + 1], origin, name), origin);
  return i + 2;
}

// vLLM reads its command line and configs as text: a byte of no UTF-8 sequence is refused where it is.
void refuse_non_utf8(std::string_view text, const std::string& origin) {
  const size_t at = core::invalid_utf8_at(text);
  if (at == std::string_view::npos) return;
  throw core::InputError(origin, 0,
                         fmt::format("not UTF-8 text: byte {} is 0x{:02x}", at, static_cast<unsigned char>(text[at])));
}

// Another server's launcher: its arguments are not vLLM's, and are refused as such, by name.
void refuse_other_servers(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < std::min<size_t>(argv.size(), 3); ++i) {
    const std::string& t = argv[i];
    if (t.starts_with("sglang") || t.ends_with("/sglang") || t.find("sglang.launch_server") != std::string::npos)
      throw core::InputError(
          fmt::format("vLLM argument {} ('{}')", i + 1, core::printable(t, 60)), 0,
          "SGLang's launch_server is not supported: from-vllm reads vLLM's engine arguments (`vllm serve MODEL "
          "...`, or a `vllm serve --config` file); SGLang's server arguments are named and defaulted differently");
    if (t.find("trtllm-serve") != std::string::npos || t.find("text-generation-launcher") != std::string::npos)
      throw core::InputError(fmt::format("vLLM argument {} ('{}')", i + 1, core::printable(t, 60)), 0,
                             "not vLLM's launcher: from-vllm reads vLLM's engine arguments (`vllm serve MODEL ...`)");
  }
}

std::string read_bounded(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw core::InputError(path, 0, "cannot be read");
  std::string text(kConfigBytesMax + 1, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > kConfigBytesMax)
    throw core::InputError(path, 0, fmt::format("larger than {} bytes: not a vLLM config", kConfigBytesMax));
  refuse_non_utf8(text, path);
  return text;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// A YAML quoted scalar's text: '...' with '' for a quote, or "..." with JSON's escapes; nullopt
// for a plain scalar.
std::optional<std::string> quoted_scalar(const std::string& value, const std::string& origin) {
  if (value.size() < 2 || value.front() != value.back() || (value.front() != '\'' && value.front() != '"'))
    return std::nullopt;
  if (value.front() == '"') {
    const Json j = Json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) throw core::InputError(origin, 0, "a double-quoted value that does not end where it should");
    return j.get<std::string>();
  }
  std::string text;
  for (size_t i = 1; i + 1 < value.size(); ++i) {
    text += value[i];
    if (value[i] == '\'' && value[i + 1] == '\'') ++i;
  }
  return text;
}

// The flat YAML of `vllm serve --config`: `key: value` lines, `#` comments; a value is a scalar or
// inline JSON ({...}, [...]). A nested block is refused, naming its line.
EngineArgs parse_flat_yaml(const std::string& text, const std::string& path) {
  EngineArgs args;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t == "---") continue;
    if (line[0] == ' ' || line[0] == '\t' || t[0] == '-')
      throw core::InputError(
          path, n, "a nested YAML block: ppspec reads flat `key: value` lines (write a nested value as inline JSON)");
    const size_t colon = t.find(':');
    if (colon == std::string::npos || colon == 0) throw core::InputError(path, n, "expected `key: value`");
    std::string value = trim(t.substr(colon + 1));
    if (value.empty())
      throw core::InputError(path, n, "a key without a value (a nested block?): write the value inline as JSON");
    if (value[0] != '"' && value[0] != '\'' && value.find(" #") != std::string::npos)
      value = trim(value.substr(0, value.find(" #")));
    const std::string origin = fmt::format("{}:{}", path, n);
    const std::string key = python_name(trim(t.substr(0, colon)));
    // A quoted scalar is text, which vLLM hands to the argument's type as it would a flag's value
    // (load_config_file: "--key", str(value)): a JSON string becomes the object it holds.
    if (const std::optional<std::string> unquoted = quoted_scalar(value, origin)) value = *unquoted;
    put(args, key, value_of(value, origin, key), origin);
  }
  return args;
}

}  // namespace

EngineArgs parse_cli(const std::vector<std::string>& argv) {
  if (argv.size() > kArgsMax)
    throw core::InputError("vLLM arguments", 0, fmt::format("more than {} of them", kArgsMax));
  for (size_t i = 0; i < argv.size(); ++i) refuse_non_utf8(argv[i], fmt::format("vLLM argument {}", i + 1));
  refuse_other_servers(argv);
  EngineArgs args;
  size_t i = 0;
  // `python -m vllm.entrypoints.openai.api_server` is `vllm serve` by another name.
  if (i + 2 < argv.size() && argv[i].starts_with("python") && argv[i + 1] == "-m" &&
      argv[i + 2] == "vllm.entrypoints.openai.api_server")
    i += 3;
  if (i < argv.size() && (argv[i] == "vllm" || argv[i].ends_with("/vllm"))) ++i;
  if (i < argv.size() && argv[i] == "serve") ++i;
  EngineArgs from_config;
  while (i < argv.size()) {
    if (!is_option(argv[i])) {
      if (!args.model.empty())
        throw core::InputError(
            fmt::format("vLLM argument {} ('{}')", i + 1, core::printable(argv[i], 60)), 0,
            fmt::format("a second model name (the first: '{}'); an option's value needs its --option before it",
                        args.model));
      args.model = argv[i++];
      continue;
    }
    const size_t next = read_option(argv, i, args);
    if (args.values.count("config")) {
      const EngineArg config = args.values.at("config");
      args.values.erase("config");
      if (!config.value.is_string()) throw core::InputError(config.origin, 0, "--config takes a file");
      merge(from_config, parse_config_file(config.value.get<std::string>()));
    }
    i = next;
  }
  merge(from_config, args);
  return from_config;
}

EngineArgs parse_config_file(const std::string& path) {
  const std::string text = read_bounded(path);
  const std::string t = trim(text);
  if (!t.starts_with("{")) return parse_flat_yaml(text, path);
  refuse_deep(text, path);
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw core::InputError(path, 0, "not a JSON object of vLLM engine arguments");
  EngineArgs args;
  for (const auto& [key, value] : j.items()) put(args, python_name(key), value, fmt::format("{} key '{}'", path, key));
  return args;
}

void merge(EngineArgs& into, const EngineArgs& over) {
  for (const auto& [name, arg] : over.values) into.values[name] = arg;
  if (!over.model.empty()) into.model = over.model;
  if (const auto it = into.values.find("model"); it != into.values.end()) {
    if (it->second.value.is_string() && into.model.empty()) into.model = it->second.value.get<std::string>();
    into.values.erase(it);
  }
}

}  // namespace ppspec::vllm_config
