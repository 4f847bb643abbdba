#include "core/json_depth.h"

#include <fmt/format.h>
#include <vector>

#include "core/printable.h"

namespace ppspec::core {
namespace {

constexpr size_t kKeyBytesShown = 40;
constexpr size_t kPathFramesShown = 8;  // the outermost ones: where in the document it is

struct Frame {
  bool array = false;
  size_t index = 0;     // an array's element
  std::string key;      // an object's current key
  bool in_key = false;  // the string being read is a key
};

std::string path_of(const std::vector<Frame>& frames) {
  std::string out;
  for (size_t i = 0; i < frames.size() && i < kPathFramesShown; ++i) {
    const Frame& f = frames[i];
    if (f.array)
      out += fmt::format("[{}]", f.index);
    else if (!f.key.empty())
      out += fmt::format("{}{}", out.empty() ? "" : ".", printable(f.key, kKeyBytesShown));
  }
  if (frames.size() > kPathFramesShown) out += "...";
  return out.empty() ? "the top level" : out;
}

// Where a byte falls relative to the JSON strings of a text, read byte by byte: both passes below
// skip what is inside a string (a bracket there opens nothing).
struct StringScan {
  bool in_string = false, escaped = false;
  // Whether `c` belongs to a string opened earlier (its closing quote included); `*own` then says
  // whether it is one of the string's own bytes (not an escape, nor the byte after one, nor the quote).
  bool inside(char c, bool* own) {
    if (!in_string) return false;
    *own = false;
    if (escaped)
      escaped = false;
    else if (c == '\\')
      escaped = true;
    else if (c == '"')
      in_string = false;
    else
      *own = true;
    return true;
  }
};

// Whether `text` opens a container more than `max` deep: the one pass every line of a trace pays
// (the path of json_too_deep is found only for a text that does).
bool deeper_than(std::string_view text, int max) {
  int depth = 0;
  StringScan scan;
  bool own = false;
  for (char c : text) {
    if (scan.inside(c, &own)) continue;
    if (c == '"') scan.in_string = true;
    if ((c == '[' || c == '{') && ++depth > max) return true;
    if (c == ']' || c == '}') --depth;
  }
  return false;
}

}  // namespace

std::optional<JsonTooDeep> json_too_deep(std::string_view text, int max) {
  if (!deeper_than(text, max)) return std::nullopt;
  std::vector<Frame> frames;  // bounded by `max` + 1
  StringScan scan;
  bool expect_key = false, own = false;
  for (size_t b = 0; b < text.size(); ++b) {
    const char c = text[b];
    if (scan.inside(c, &own)) {
      if (own && !frames.empty() && frames.back().in_key && frames.back().key.size() < kKeyBytesShown + 1)
        frames.back().key += c;
      continue;
    }
    switch (c) {
      case '"':
        scan.in_string = true;
        if (!frames.empty() && !frames.back().array && expect_key) {
          frames.back().key.clear();
          frames.back().in_key = true;
        }
        break;
      case ':':
        if (!frames.empty()) frames.back().in_key = false;
        expect_key = false;
        break;
      case ',':
        if (!frames.empty() && frames.back().array) ++frames.back().index;
        expect_key = !frames.empty() && !frames.back().array;
        break;
      case '[':
      case '{':
        if (static_cast<int>(frames.size()) >= max) return JsonTooDeep{b, path_of(frames)};
        frames.push_back(Frame{c == '[', 0, "", false});
        expect_key = c == '{';
        break;
      case ']':
      case '}':
        if (!frames.empty()) frames.pop_back();
        expect_key = false;
        break;
      default: break;
    }
  }
  return std::nullopt;
}

}  // namespace ppspec::core
