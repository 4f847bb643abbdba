// The hash of what a scenario file says, not how it is laid out: its TOML with comments, trailing
// blanks and empty lines left out. A trace records it beside the hash of the file's bytes, so that
// a scenario a user has only commented or re-spaced still configures the trace's check and replay.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppspec::scenario {

// The text without its comments (a `#` outside every kind of string, to the end of its line), each
// line's trailing spaces, or its empty lines.
std::string toml_content(std::string_view text);
// core::fnv1a_bytes of toml_content(text).
uint64_t toml_content_hash(std::string_view text);

}  // namespace ppspec::scenario
