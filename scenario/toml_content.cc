#include "scenario/toml_content.h"

#include "core/assert.h"
#include "core/hash.h"

namespace ppspec::scenario {
namespace {

enum class In : uint8_t { code, basic, literal, multi_basic, multi_literal };

bool starts(std::string_view text, size_t i, std::string_view what) { return text.substr(i, what.size()) == what; }

// Appends the finished line unless it is empty once its trailing blanks are gone (in code).
void end_line(std::string& out, std::string& line, In in) {
  if (in == In::code)
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
  if (!line.empty() || in == In::multi_basic || in == In::multi_literal) out += line + '\n';
  line.clear();
}

}  // namespace

std::string toml_content(std::string_view text) {
  std::string out, line;
  In in = In::code;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      if (in == In::basic || in == In::literal) in = In::code;  // an unterminated one-line string: the loader says so
      end_line(out, line, in);
      continue;
    }
    if (in == In::code && c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    line += c;
    if ((in == In::basic || in == In::multi_basic) && c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
      line += text[++i];
      continue;
    }
    const bool three_double = starts(text, i, "\"\"\""), three_single = starts(text, i, "'''");
    if (in == In::code && (three_double || three_single)) {
      line += text.substr(i + 1, 2);
      i += 2;
      in = three_double ? In::multi_basic : In::multi_literal;
    } else if ((in == In::multi_basic && three_double) || (in == In::multi_literal && three_single)) {
      line += text.substr(i + 1, 2);
      i += 2;
      in = In::code;
    } else if (in == In::code && (c == '"' || c == '\'')) {
      in = c == '"' ? In::basic : In::literal;
    } else if ((in == In::basic && c == '"') || (in == In::literal && c == '\'')) {
      in = In::code;
    }
  }
  end_line(out, line, in);
  PPSPEC_ASSERT(out.size() <= text.size() + 1);
  return out;
}

uint64_t toml_content_hash(std::string_view text) {
  const std::string content = toml_content(text);
  return core::fnv1a_bytes(content.data(), content.size());
}

}  // namespace ppspec::scenario
