// How a ppspec process ended when it did not end as ppspec does (exit 0 to 3): killed by a signal,
// or exited with another status. A sanitizer's report is the second kind: the ppspec binary makes
// AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer exit with kSanitizerExitStatus
// (tools/sanitizer_options.cc), which ppspec never uses itself, so that a memory error found in a
// `fuzz --jobs` worker is a crash rather than a failing verdict (exit 1 is both, by default).
#pragma once

#include <optional>
#include <string>

namespace ppspec::fuzzer {

#define PPSPEC_SANITIZER_EXIT_STATUS 86
inline constexpr int kSanitizerExitStatus = PPSPEC_SANITIZER_EXIT_STATUS;

struct Death {
  int signal = 0;  // the signal that killed it, or 0
  int status = 0;  // else its exit status
  bool operator==(const Death&) const = default;
};

// The death a waitpid status says, or nullopt when the process ended as ppspec ends.
std::optional<Death> death_of(int wait_status);
// "died of signal 11 (Segmentation fault)", "exited with status 86 (a sanitizer's report)".
std::string describe(const Death& d);

}  // namespace ppspec::fuzzer
