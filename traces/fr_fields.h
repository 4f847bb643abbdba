// Typed, range-checked reads of a Flight Recorder record's fields. A value of another type or out
// of range is a core::InputError naming the file, the record and the field: a dump is read exactly
// or not at all (1.5 is not 1, and 2^64 - 1 is not -1).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ppspec::traces {

// Where a field is: the file and the record, for the error message.
struct FrPlace {
  const std::string& file;
  std::string record;  // "entry 12 (record 12)", "pg_config '1'", "the dump"

  [[noreturn]] void fail(const std::string& what) const;
  const nlohmann::json& at(const nlohmann::json& j, const char* key) const;  // the field, which must exist
  int64_t integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi) const;
  int64_t integer_value(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi) const;
  // An integer field that may be absent, null or 0 (PyTorch writes "not recorded" all three ways).
  int64_t optional_time(const nlohmann::json& j, const char* key) const;
  std::string text(const nlohmann::json& j, const char* key, size_t max) const;
  bool boolean(const nlohmann::json& j, const char* key) const;
  std::vector<std::vector<int64_t>> sizes(const nlohmann::json& j, const char* key) const;
  std::vector<std::string> texts(const nlohmann::json& j, const char* key) const;
};

// A decimal number that is the whole of `text`, in [lo, hi]; nullopt otherwise ("1junk", "-0x1").
bool parse_decimal(const std::string& text, int64_t lo, int64_t hi, int64_t& out);

}  // namespace ppspec::traces
