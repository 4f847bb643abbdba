#include "scenario/vllm_config/reader.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_depth.h"
#include "core/json_shown.h"
#include "core/printable.h"

namespace ppspec::vllm_config {

using Json = nlohmann::json;

const EngineArg* Reader::get(const std::string& name) {
  used_.insert(name);
  const auto it = args_.values.find(name);
  return it == args_.values.end() ? nullptr : &it->second;
}

std::string Reader::origin_of(const std::string& name) const {
  const auto it = args_.values.find(name);
  return it == args_.values.end() ? "vLLM's default" : it->second.origin;
}

std::optional<int64_t> Reader::integer(const std::string& name, int64_t lo, int64_t hi) {
  const EngineArg* a = get(name);
  if (a == nullptr) return std::nullopt;
  return checked_integer(a->value, a->origin, name, lo, hi);
}

std::optional<bool> Reader::boolean(const std::string& name) {
  const EngineArg* a = get(name);
  if (a == nullptr) return std::nullopt;
  if (!a->value.is_boolean())
    throw core::InputError(a->origin, 0, fmt::format("{}: expected true or false, got {}", name, shown(a->value)));
  return a->value.get<bool>();
}

std::optional<Json> Reader::object(const std::string& name, const std::string& expected) {
  const EngineArg* a = get(name);
  if (a == nullptr) return std::nullopt;
  if (!a->value.is_string()) return a->value;
  const std::string& text = a->value.get<std::string>();
  if (const auto deep = core::json_too_deep(text))
    throw core::InputError(
        a->origin, 0,
        fmt::format("{}: a value nested more than {} deep (byte {})", name, core::kJsonDepthMax, deep->byte));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw core::InputError(a->origin, 0,
                           fmt::format("{}: expected {}, got the text {} (not JSON)", name, expected, shown(a->value)));
  return j;
}

void Reader::map(std::string vllm, std::string scenario) {
  const std::string name = vllm.substr(0, vllm.find_first_of(" .="));
  const auto it = args_.values.find(name);
  std::string origin = it == args_.values.end() ? "" : it->second.origin;
  out_.mapped.push_back(Mapping{std::move(vllm), std::move(scenario), std::move(origin)});
}

std::string Reader::shown(const Json& v) { return core::shown(v, 60); }

int64_t Reader::checked_integer(const Json& v, const std::string& origin, const std::string& name, int64_t lo,
                                int64_t hi) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw core::InputError(origin, 0,
                           fmt::format("{}: expected an integer in [{}, {}], got {}", name, lo, hi, shown(v)));
  return v.get<int64_t>();
}

}  // namespace ppspec::vllm_config
