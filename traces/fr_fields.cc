#include "traces/fr_fields.h"

#include <charconv>
#include <fmt/format.h>

#include "core/error.h"
#include "core/printable.h"
#include "traces/flight_recorder.h"
#include "core/json_shown.h"

namespace ppspec::traces {

using Json = nlohmann::json;

void FrPlace::fail(const std::string& what) const {
  throw core::InputError(file, 0, fmt::format("{}: {}", record, what));
}

const Json& FrPlace::at(const Json& j, const char* key) const {
  if (!j.is_object()) fail("expected an object");
  const auto it = j.find(key);
  if (it == j.end()) fail(fmt::format("no '{}'", key));
  return *it;
}

int64_t FrPlace::integer_value(const Json& v, const std::string& what, int64_t lo, int64_t hi) const {
  // nlohmann keeps integers exact (signed or unsigned 64-bit) and anything with a fraction or an
  // exponent as a double: only the first two are integers here.
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) fail(fmt::format("{} is {}: out of [{}, {}]", what, core::shown(v), lo, hi));
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer())
    fail(fmt::format("{} is {} ({}): expected an integer in [{}, {}]", what, core::shown(v), v.type_name(), lo, hi));
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) fail(fmt::format("{} is {}: out of [{}, {}]", what, i, lo, hi));
  return i;
}

int64_t FrPlace::integer(const Json& j, const char* key, int64_t lo, int64_t hi) const {
  return integer_value(at(j, key), fmt::format("'{}'", key), lo, hi);
}

int64_t FrPlace::optional_time(const Json& j, const char* key) const {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  return integer_value(*it, fmt::format("'{}'", key), 0, INT64_MAX);
}

std::string FrPlace::text(const Json& j, const char* key, size_t max) const {
  const Json& v = at(j, key);
  if (!v.is_string()) fail(fmt::format("'{}' is {} ({}): expected a string", key, core::shown(v), v.type_name()));
  std::string s = v.get<std::string>();
  if (s.size() > max) fail(fmt::format("'{}' is longer than {} characters", key, max));
  return s;
}

bool FrPlace::boolean(const Json& j, const char* key) const {
  const Json& v = at(j, key);
  if (!v.is_boolean()) fail(fmt::format("'{}' is {} ({}): expected true or false", key, core::shown(v), v.type_name()));
  return v.get<bool>();
}

std::vector<std::vector<int64_t>> FrPlace::sizes(const Json& j, const char* key) const {
  const Json& v = at(j, key);
  if (!v.is_array() || v.size() > kFrTensorsMax)
    fail(fmt::format("'{}' is not a list of at most {} tensors' sizes", key, kFrTensorsMax));
  std::vector<std::vector<int64_t>> out;
  for (size_t t = 0; t < v.size(); ++t) {
    const Json& dims = v[t];
    if (!dims.is_array() || dims.size() > kFrTensorsMax)
      fail(fmt::format("'{}'[{}] is {}: expected a list of dimensions", key, t, core::shown(dims)));
    std::vector<int64_t> d;
    for (size_t i = 0; i < dims.size(); ++i)
      d.push_back(integer_value(dims[i], fmt::format("'{}'[{}][{}]", key, t, i), 0, kFrSizeMax));
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> FrPlace::texts(const Json& j, const char* key) const {
  const Json& v = at(j, key);
  if (!v.is_array() || v.size() > kFrTensorsMax)
    fail(fmt::format("'{}' is not a list of at most {} names", key, kFrTensorsMax));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get_ref<const std::string&>().size() > 64)
      fail(fmt::format("'{}'[{}] is {}: expected a dtype name", key, i, core::shown(v[i])));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

bool parse_decimal(const std::string& text, int64_t lo, int64_t hi, int64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi) return false;
  out = v;
  return true;
}

}  // namespace ppspec::traces
