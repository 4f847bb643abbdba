// The sanitizers' defaults for the ppspec binary (read by their runtimes before main; the
// environment's ASAN_OPTIONS, LSAN_OPTIONS and UBSAN_OPTIONS still override them). A report exits
// with a status ppspec never uses itself (scenario/fuzzer/death.h), so that the parent of a `fuzz --jobs`
// worker, or of a crash's shrink, tells a memory error from a failing verdict (both exit 1 by
// default). In a build without sanitizers nothing calls these.
#include "scenario/fuzzer/death.h"

#define PPSPEC_STRINGIFY_VALUE(x) #x
#define PPSPEC_STRINGIFY(x) PPSPEC_STRINGIFY_VALUE(x)
#define PPSPEC_SANITIZER_DEFAULTS "exitcode=" PPSPEC_STRINGIFY(PPSPEC_SANITIZER_EXIT_STATUS)

extern "C" {
__attribute__((visibility("default"), used)) const char* __asan_default_options() { return PPSPEC_SANITIZER_DEFAULTS; }
__attribute__((visibility("default"), used)) const char* __lsan_default_options() { return PPSPEC_SANITIZER_DEFAULTS; }
__attribute__((visibility("default"), used)) const char* __ubsan_default_options() { return PPSPEC_SANITIZER_DEFAULTS; }
}
