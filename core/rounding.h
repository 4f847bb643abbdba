// Rounding a double to an integer as std::llround does (halves away from zero), without libm's
// call: the simulator rounds every jittered kernel duration (libm's llround was 0.7 % of a fuzz
// campaign's instructions, docs/evidence/allocator-choice/allocator-compare.txt).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/assert.h"

namespace ppspec::core {

// For |x| < 2^62. Below 2^52 a double's fraction x - trunc(x) is exact; at and above it a double
// is an integer already, and its fraction is zero.
inline int64_t round_half_away(double x) {
  PPSPEC_ASSERT(std::fabs(x) < 0x1p62, "rounding {}: beyond ±2^62", x);
  const auto whole = static_cast<int64_t>(x);  // toward zero
  const double fraction = x - static_cast<double>(whole);
  return fraction >= 0.5 ? whole + 1 : fraction <= -0.5 ? whole - 1 : whole;
}

}  // namespace ppspec::core
