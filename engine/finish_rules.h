// How a request's sampled tokens of one step end up in its output, and whether the step finishes
// it (vLLM's `check_stop` per appended token, SGLang's `check_finished`). A verification step can
// sample up to K + 1 tokens at once, so the rules apply token by token, in order: a token past the
// length cap is not kept; a stop token is kept and ends the output, and nothing after it is
// returned. A stop inside the accepted run therefore wins over a cap the run crosses later.
#pragma once

#include <cstdint>
#include <span>

namespace ppspec::engine {

enum class FinishReason : uint8_t { none, stop, length };

struct KeptTokens {
  int32_t count = 0;  // the first `count` tokens of the step join the output
  FinishReason reason = FinishReason::none;
};

struct FinishRules {
  int32_t max_tokens = 0;
  int64_t stop_token = -1;  // -1: none
  // The fault `cap_before_stop` (SGLang #33758): the cap is tested for the whole run first, and a
  // run that reaches it is cut at the cap without looking for a stop inside it.
  bool cap_before_stop = false;
};

// The tokens kept from `sampled`, for a request that has `output_len` output tokens so far.
KeptTokens keep_sampled(const FinishRules& rules, int32_t output_len, std::span<const int64_t> sampled);

}  // namespace ppspec::engine
