// A reader of Python pickles of plain objects (dict, list, tuple, str, int, float, bool, None) —
// what PyTorch's Flight Recorder writes — into JSON values, without Python. Protocols 2 to 5; any
// other opcode (a class, a reduce, bytes) is an input error naming the byte offset, never run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ppspec::traces {

inline constexpr size_t kPickleDepthMax = 64;         // nesting of containers
inline constexpr size_t kPickleStackMax = 1 << 20;    // values on the stack at once

// Throws core::InputError(file, 0, "pickle byte N: ...").
nlohmann::json unpickle(std::string_view bytes, const std::string& file);

}  // namespace ppspec::traces
