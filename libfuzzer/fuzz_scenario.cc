// Fuzz target: the scenario reader. Every input — a program or a serving scenario, or anything
// else — must load or be rejected with core::InputError; a crash, a sanitizer report, an internal
// error or any other exception is a bug (libfuzzer/README.md).
#include <cstddef>
#include <cstdint>

#include "libfuzzer/scenario_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ppspec::fuzz::load_scenario(data, size);
  return 0;
}
