// Which elements a kernel really stored, on either runtime, without changing what it computes:
// before the kernel the range is saved and filled with a poison byte; after it, an element still
// all poison was not stored, and gets its saved value back (so a kernel that skips rows leaves
// them as stale as it would without the check). A kernel storing exactly the poison pattern would
// read as "not written": the checked buffers hold token ids, positions and flags, none of which
// can equal 0xA5A5... in this engine.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

inline constexpr uint8_t kPoisonByte = 0xA5;
inline constexpr uint32_t kPoisonWord = 0xA5A5A5A5U;                  // a 4-byte element nothing stored
inline constexpr uint64_t kPoisonDoubleWord = 0xA5A5A5A5A5A5A5A5ULL;  // an 8-byte one (a slot, a position)

struct RestoreUnwrittenKernel {
  int32_t elem_bytes;
  Span<uint8_t> data;         // [elements * elem_bytes], checked range only
  Span<const uint8_t> saved;  // its contents before the kernel
  Span<uint8_t> unwritten;    // [elements]: 1 when the kernel did not store the element
  PPSPEC_HD void row(int64_t e) const {
    const int64_t first = e * elem_bytes;
    bool poison = true;
    for (int32_t b = 0; b < elem_bytes; ++b) poison = poison && data[first + b] == kPoisonByte;
    unwritten[e] = poison ? 1 : 0;
    if (!poison) return;
    for (int32_t b = 0; b < elem_bytes; ++b) data[first + b] = saved[first + b];
  }
};

// One check covers up to this many buffers (a prepare kernel's ids, positions and flags), each
// range saved, poisoned and restored by one launch for all of them.
inline constexpr int32_t kCheckBandsMax = 3;

// Saves each range's bytes, then fills it with the poison byte; one program per range.
struct SaveAndPoisonKernel {
  int32_t bands;
  Span<uint8_t> data[kCheckBandsMax];
  Span<uint8_t> saved[kCheckBandsMax];
  PPSPEC_HD void row(int64_t b) const {
    if (b < 0 || b >= bands) out_of_bounds(b, 1, bands);
    // Whole ranges, in the order the element loop touched them (an assignment evaluates its right
    // side first: the band, then its copy), both writes through their writable views.
    const int64_t n = data[b].size;
    uint8_t* band = data[b].write_range(0, n);
    uint8_t* copy = saved[b].write_range(0, n);
    for (int64_t i = 0; i < n; ++i) {
      copy[i] = band[i];
      band[i] = kPoisonByte;
    }
  }
};

// RestoreUnwrittenKernel over every range of a check: row r is element r % elements of range
// r / elements (every range holds `elements` elements).
struct RestoreUnwrittenBandsKernel {
  int32_t bands;
  int64_t elements;
  RestoreUnwrittenKernel band[kCheckBandsMax];
  PPSPEC_HD void row(int64_t r) const {
    const int64_t b = r / elements;
    if (b >= bands) out_of_bounds(b, 1, bands);
    band[b].row(r % elements);
  }
};

}  // namespace ppspec::kernels
