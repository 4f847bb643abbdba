// FNV-1a over 32-bit words: how a weight table is fingerprinted, by the engine that binds it and by
// the checker that compares it with the checkpoint (the same function on both sides, so the two agree).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ppspec::core {

inline uint64_t fnv1a_words(const uint32_t* words, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    for (int b = 0; b < 4; ++b) {
      h ^= (words[i] >> (8 * b)) & 0xffU;
      h *= 0x100000001b3ULL;
    }
  }
  // Events carry non-negative values: keep the hash in 63 bits.
  return h >> 1;
}

}  // namespace ppspec::core
