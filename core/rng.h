// Seeded, platform-independent random numbers. The standard distributions are not portable across
// library implementations, so the simulator draws only from these.
#pragma once

#include <cstdint>

namespace ppspec::core {

// SplitMix64: tiny, fast, and good enough to seed and to drive schedule choices.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n); n > 0. Lemire's multiply-shift; the tiny bias is irrelevant here.
  uint64_t below(uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

  // Uniform in [-1, 1) with 2^-52 resolution, for jitter.
  double symmetric_unit() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }

 private:
  uint64_t state_;
};

// Derives independent streams from one seed (schedule choices, jitter, ...).
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  Rng r(seed ^ (stream * 0xD1B54A32D192ED03ULL));
  return r.next();
}

}  // namespace ppspec::core
