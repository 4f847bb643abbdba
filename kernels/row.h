// Every kernel is written once as row functions usable on the host (the simulator's CPU launchers)
// and on the device (CUDA launchers). Arithmetic is integer, or IEEE-exact floating point, so CPU
// and GPU results are bit-identical (DESIGN §5).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PPSPEC_HD __host__ __device__
// An element access of every kernel row: always inlined, whatever a translation unit's other
// inlining (a unity batch's contents must not decide the hot path's cost).
#define PPSPEC_HD_ALWAYS_INLINE __host__ __device__ __forceinline__
#else
#define PPSPEC_HD
#define PPSPEC_HD_ALWAYS_INLINE [[gnu::always_inline]] inline
#endif

namespace ppspec::kernels {

inline constexpr int64_t kPadSlot = -1;  // PAD_SLOT_ID: kernels never write this slot

// Integer mixing (splitmix64 finaliser), the toy model's only nonlinearity.
PPSPEC_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

PPSPEC_HD inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352DU;
  x ^= x >> 15;
  x *= 0x846CA68BU;
  x ^= x >> 16;
  return x;
}

// R^p mod 2^32 by squaring: the positional weight of the context lane.
PPSPEC_HD inline uint32_t pow32(uint32_t r, uint64_t p) {
  uint32_t acc = 1;
  while (p != 0) {
    if (p & 1) acc *= r;
    r *= r;
    p >>= 1;
  }
  return acc;
}

}  // namespace ppspec::kernels
