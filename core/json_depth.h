// How deep a JSON text nests, found by one pass over its bytes before any parser or copy of a JSON
// value recurses into it: nlohmann's copies, comparisons and dumps recurse per level, so a value
// nested 100,000 deep overflows the stack wherever it travels. Every reader of JSON that a user
// hands ppspec (vLLM configs and arguments, Flight Recorder dumps) refuses such a text first,
// naming where it nests too deeply.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ppspec::core {

// Deeper than any format ppspec reads needs (a Flight Recorder entry's sizes nest 5 deep, a vLLM
// compilation config a few more), shallow enough for every recursion over a value.
inline constexpr int kJsonDepthMax = 64;

struct JsonTooDeep {
  size_t byte = 0;   // where the first container past the limit opens
  std::string path;  // the keys and indexes down to it: entries[17].input_sizes[0]
};

// Where `text` first opens a container more than `max` deep (brackets inside strings do not
// count); nullopt when it never does. It does not check that the text is JSON.
std::optional<JsonTooDeep> json_too_deep(std::string_view text, int max = kJsonDepthMax);

}  // namespace ppspec::core
