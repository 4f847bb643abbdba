// The model's text. A real tokenizer maps each token id to a piece of text; the engine's front end
// (vLLM's IncrementalDetokenizer) appends the pieces of a request's new tokens to its output text and
// looks for the request's stop strings in it. Here every token decodes to a fixed piece of one to
// three letters of kTextAlphabet, drawn from the token id alone, so that stop strings of a few
// letters complete inside one token, across two, or across a step's whole accepted run.
// Simplifications: no byte-level merging (a piece never depends on the tokens around it, where a
// real detokenizer can hold back an incomplete UTF-8 sequence) and the stop token is a special
// token that decodes to nothing (vLLM's skip_special_tokens).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppspec::engine {

struct ModelConfig;

inline constexpr std::string_view kTextAlphabet = "abcd";
inline constexpr int kMaxPieceLength = 3;

// The piece `token` decodes to, appended to `text`; returns its length.
int append_token_text(const ModelConfig& m, int64_t token, std::string& text);

// The length of the piece `token` decodes to.
int token_text_length(const ModelConfig& m, int64_t token);

}  // namespace ppspec::engine
