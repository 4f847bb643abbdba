// The draws every serving-case generator makes, each shrinking toward its simplest value: a
// range's lower end, and false.
#pragma once

#include <rapidcheck.h>

#include "scenario/fuzzer/space.h"

namespace ppspec::fuzzer {

inline int pick(Range r) { return *rc::gen::inRange(r.lo, r.hi + 1); }

// A drawn flag that shrinks to false, and is always false where the space forbids it.
inline bool maybe(bool allowed) { return allowed && *rc::gen::arbitrary<bool>(); }

}  // namespace ppspec::fuzzer
