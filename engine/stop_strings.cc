#include "engine/stop_strings.h"

#include <algorithm>
#include <limits>

#include "core/assert.h"
#include "engine/config.h"
#include "engine/detokenizer.h"

namespace ppspec::engine {

namespace {

struct Found {
  int32_t stop = -1;
  size_t at = 0;   // where it begins in the text
  size_t end = 0;  // where it ends
};

// Where the search for a stop string begins. vLLM searches from new_char_count + len - 1 characters
// before the end: far enough back that a stop string straddling the earlier text is found, no
// further. SGLang's tail window (the fault) decodes only the last longest + 1 tokens.
size_t search_from(const ModelConfig& m, const StopStringRules& rules, std::span<const int64_t> output,
                   size_t text_before, size_t length, size_t text_size) {
  if (!rules.tail_window) return text_before + 1 >= length ? text_before + 1 - length : 0;
  size_t longest = 0;
  for (const std::string& s : rules.stop) longest = std::max(longest, s.size());
  const size_t tail = std::min(output.size(), longest + 1);
  size_t chars = 0;
  for (size_t i = output.size() - tail; i < output.size(); ++i)
    chars += static_cast<size_t>(token_text_length(m, output[i]));
  return text_size >= chars ? text_size - chars : 0;
}

Found find_stop(const ModelConfig& m, const StopStringRules& rules, std::span<const int64_t> output, size_t text_before,
                const std::string& text) {
  Found best;
  size_t best_end = std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < rules.stop.size(); ++i) {
    const std::string& s = rules.stop[i];
    const size_t at = text.find(s, search_from(m, rules, output, text_before, s.size(), text.size()));
    if (at == std::string::npos) continue;
    if (at + s.size() < best_end) {
      best = Found{static_cast<int32_t>(i), at, at + s.size()};
      best_end = best.end;
    }
    if (rules.first_listed) break;
  }
  return best;
}

}  // namespace

StopMatch stop_string_update(const ModelConfig& m, const StopStringRules& rules, std::span<const int64_t> output,
                             int32_t new_tokens, std::string& text) {
  PPSPEC_ASSERT(new_tokens >= 0 && static_cast<size_t>(new_tokens) <= output.size(), "{} new tokens of an output of {}",
                new_tokens, output.size());
  const size_t text_before = text.size();
  const size_t first_new = output.size() - static_cast<size_t>(new_tokens);
  for (size_t i = first_new; i < output.size(); ++i) append_token_text(m, output[i], text);
  StopMatch match{-1, new_tokens};
  if (text.size() == text_before || rules.stop.empty()) return match;
  const Found found = find_stop(m, rules, output, text_before, text);
  if (found.stop < 0) return match;
  match.stop = found.stop;
  // The tokens returned: those whose text begins before the stop string ends (the one that
  // completes it among them), as appending them one at a time would have stopped there.
  if (!rules.keeps_tokens) {
    size_t start = text_before;
    match.kept = 0;
    for (size_t i = first_new; i < output.size() && start < found.end; ++i) {
      ++match.kept;
      start += static_cast<size_t>(token_text_length(m, output[i]));
    }
  }
  text.resize(rules.include_in_output ? found.end : found.at);
  PPSPEC_ASSERT(match.kept >= 0 && match.kept <= new_tokens);
  return match;
}

}  // namespace ppspec::engine
