// UTF-8 validity of user input: JSON (nlohmann's dump), TOML and Python's pickle all refuse text
// that is not UTF-8, so ppspec checks where text comes in and says where it breaks.
#pragma once

#include <cstddef>
#include <string_view>

namespace ppspec::core {

// The offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF), or npos when `s` is all UTF-8.
size_t invalid_utf8_at(std::string_view s);

// The length of the well-formed UTF-8 sequence at s[i], or 0 when none starts there.
size_t utf8_sequence_at(std::string_view s, size_t i);

}  // namespace ppspec::core
