// The draws every serving-case generator makes, each shrinking toward its simplest value: a
// range's lower end, and false.
#pragma once

#include <algorithm>
#include <rapidcheck.h>
#include <string>

#include "engine/detokenizer.h"
#include "scenario/fuzzer/space.h"
#include "scenario/serving_case.h"

namespace ppspec::fuzzer {

inline int pick(Range r) { return *rc::gen::inRange(r.lo, r.hi + 1); }

// A drawn flag that shrinks to false, and is always false where the space forbids it.
inline bool maybe(bool allowed) { return allowed && *rc::gen::arbitrary<bool>(); }

// Stop strings of the model's text (engine/detokenizer.h): one to three of two to four letters, so
// that some complete inside a step's accepted run and some not at all. A string drawn twice is
// listed once: a loop drawing until the strings differ could spin for ever while a case shrinks.
inline void pick_stop_strings(scenario::ServingCase& c) {
  const int n = *rc::gen::inRange(1, 4);
  for (int i = 0; i < n; ++i) {
    std::string s;
    for (int len = *rc::gen::inRange(2, 5); static_cast<int>(s.size()) < len;)
      s.push_back(engine::kTextAlphabet[static_cast<size_t>(*rc::gen::inRange(0, 4))]);
    if (std::find(c.stop_strings.begin(), c.stop_strings.end(), s) == c.stop_strings.end()) c.stop_strings.push_back(s);
  }
  c.include_stop_str = maybe(true);
}

}  // namespace ppspec::fuzzer
