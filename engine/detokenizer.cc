#include "engine/detokenizer.h"

#include "core/assert.h"
#include "engine/config.h"

namespace ppspec::engine {

namespace {

// A token's bits (splitmix64's finaliser): neighbouring ids get unrelated pieces.
uint64_t token_bits(int64_t token) {
  uint64_t z = static_cast<uint64_t>(token) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

int token_text_length(const ModelConfig& m, int64_t token) {
  PPSPEC_ASSERT(token >= 0 && token < m.vocab, "token {} outside the vocabulary of {}", token, m.vocab);
  if (token == m.stop_token) return 0;
  return 1 + static_cast<int>(token_bits(token) % kMaxPieceLength);
}

int append_token_text(const ModelConfig& m, int64_t token, std::string& text) {
  const int n = token_text_length(m, token);
  uint64_t bits = token_bits(token) / kMaxPieceLength;
  for (int i = 0; i < n; ++i) {
    text.push_back(kTextAlphabet[bits % kTextAlphabet.size()]);
    bits /= kTextAlphabet.size();
  }
  return n;
}

}  // namespace ppspec::engine
