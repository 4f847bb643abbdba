#include "engine/finish_rules.h"

#include "core/assert.h"

namespace ppspec::engine {

KeptTokens keep_sampled(const FinishRules& rules, int32_t output_len, std::span<const int64_t> sampled) {
  PPSPEC_ASSERT(rules.max_tokens >= 1 && output_len >= 0 && output_len < rules.max_tokens,
                "finish rules for a request with {} of {} tokens", output_len, rules.max_tokens);
  const auto room = rules.max_tokens - output_len;
  const auto n = static_cast<int32_t>(sampled.size());
  KeptTokens kept;
  if (rules.cap_before_stop && n >= room) return KeptTokens{room, FinishReason::length};
  for (const int64_t token : sampled) {
    if (kept.count == room) break;
    ++kept.count;
    if (token == rules.stop_token) return KeptTokens{kept.count, FinishReason::stop};
  }
  if (output_len + kept.count == rules.max_tokens) kept.reason = FinishReason::length;
  PPSPEC_ASSERT(kept.count <= n && output_len + kept.count <= rules.max_tokens);
  return kept;
}

}  // namespace ppspec::engine
