#include "traces/pickle_writer.h"

#include <cstring>

#include "core/assert.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;

void put_le(std::string& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_int(std::string& out, int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    out.push_back('J');  // BININT
    put_le(out, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    return;
  }
  out.push_back(static_cast<char>(0x8a));  // LONG1: 8 bytes of two's complement
  out.push_back(8);
  put_le(out, static_cast<uint64_t>(v), 8);
}

void put_string(std::string& out, const std::string& s) {
  out.push_back('X');  // BINUNICODE
  put_le(out, s.size(), 4);
  out += s;
}

void put(std::string& out, const Json& v, size_t depth) {
  PPSPEC_ASSERT(depth < 64, "a value nested too deeply to pickle");
  switch (v.type()) {
    case Json::value_t::null: out.push_back('N'); return;
    case Json::value_t::boolean: out.push_back(static_cast<char>(v.get<bool>() ? 0x88 : 0x89)); return;
    case Json::value_t::number_integer: put_int(out, v.get<int64_t>()); return;
    case Json::value_t::number_unsigned:
      PPSPEC_ASSERT(v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX), "an unsigned integer past int64 to pickle");
      put_int(out, static_cast<int64_t>(v.get<uint64_t>()));
      return;
    case Json::value_t::number_float: {
      out.push_back('G');  // BINFLOAT, big-endian
      const double d = v.get<double>();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
      return;
    }
    case Json::value_t::string: put_string(out, v.get_ref<const std::string&>()); return;
    case Json::value_t::array:
      out.push_back(']');
      if (v.empty()) return;
      out.push_back('(');
      for (const Json& item : v) put(out, item, depth + 1);
      out.push_back('e');  // APPENDS
      return;
    case Json::value_t::object:
      out.push_back('}');
      if (v.empty()) return;
      out.push_back('(');
      for (const auto& [key, item] : v.items()) {
        put_string(out, key);
        put(out, item, depth + 1);
      }
      out.push_back('u');  // SETITEMS
      return;
    default: PPSPEC_ASSERT(false, "a value of type {} cannot be pickled", v.type_name());
  }
}

}  // namespace

std::string pickle(const Json& value) {
  std::string out = "\x80\x02";  // PROTO 2
  put(out, value, 0);
  out.push_back('.');
  return out;
}

}  // namespace ppspec::traces
