// Stop strings, as vLLM's front end applies them (vllm/v1/engine/detokenizer.py: the incremental
// detokenizer's update, then check_stop_strings). The engine core knows nothing of them: it returns
// each step's accepted tokens; the front end appends their text to the request's output text and
// looks for a stop string completed in the new text. On a match the request ends there: the text is
// cut at the stop string (or after it, with include_stop_str_in_output), the tokens whose text
// begins after the stop string are dropped (vLLM #47616's fix), and the front end aborts the
// request in the engine core. A verification step can append K + 1 tokens at once, so several stop
// strings can complete in one update; the one that completes earliest wins (vLLM #49391's fix), ties
// in the order the request lists them: what appending the tokens one at a time would give.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ppspec::engine {

struct ModelConfig;

inline constexpr int kMaxStopStrings = 4;
inline constexpr int kMaxStopStringLength = 16;

struct StopStringRules {
  std::span<const std::string> stop;  // in the order the request lists them
  bool include_in_output = false;
  // vLLM #47616: the text is cut at the stop string, the token ids are not: tokens sampled after the
  // stop string in the same accepted run are returned.
  bool keeps_tokens = false;
  // vLLM #49391: of the stop strings found in the new text, the one listed earliest wins, not the one that
  // completes earliest, so an earlier-completing one stays in the output.
  bool first_listed = false;
  // SGLang #23802: only the text of the last (longest stop string + 1) tokens is searched, so a stop
  // string that completes early in a longer accepted run is never seen.
  bool tail_window = false;
};

struct StopMatch {
  int32_t stop = -1;  // the stop string that ended the request (its index in the list); -1: none
  int32_t kept = 0;   // how many of the update's new tokens the front end returns
};

// The front end's update with the last `new_tokens` tokens of a request's `output`: their text is
// appended to `text`, then a stop string is looked for; on a match `text` is cut as above.
StopMatch stop_string_update(const ModelConfig& m, const StopStringRules& rules, std::span<const int64_t> output,
                             int32_t new_tokens, std::string& text);

}  // namespace ppspec::engine
