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

// FNV-1a over bytes: the fingerprint of a scenario file that a trace records, so that the file
// configuring an offline check is provably the one the run used. 63 bits, as above.
inline uint64_t fnv1a_bytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h >> 1;
}

}  // namespace ppspec::core
