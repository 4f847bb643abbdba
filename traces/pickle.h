// A reader of Python pickles of plain objects (dict, list, tuple, str, int, float, bool, None) —
// what PyTorch's Flight Recorder writes — into JSON values, without Python. Protocols 2 to 5; any
// other opcode (a class, a reduce, bytes) is an input error naming the byte offset, never run.
// Work and memory are linear in the input: containers are filled in place and memo references
// shared, and the value is materialised once, at most kPickleDepthMax deep and kPickleValuesMax
// values in all (a few hundred bytes of memo references can describe gigabytes).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ppspec::traces {

inline constexpr size_t kPickleDepthMax = 64;                // nesting of containers (and of MARKs)
inline constexpr size_t kPickleStackMax = 1 << 22;           // values built, and on the stack at once
inline constexpr size_t kPickleValuesMax = size_t{1} << 22;  // values in the result (a 2,000-entry dump: ~10^5)
inline constexpr size_t kPickleBytesMax = size_t{1} << 28;   // bytes of text in the result

// Throws core::InputError(file, 0, "pickle byte N: ...").
nlohmann::json unpickle(std::string_view bytes, const std::string& file);

}  // namespace ppspec::traces
