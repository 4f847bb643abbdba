#include "scenario/fuzzer/death.h"

#include <cstring>
#include <fmt/format.h>
#include <sys/wait.h>

#include "core/assert.h"

namespace ppspec::fuzzer {

std::optional<Death> death_of(int wait_status) {
  if (WIFSIGNALED(wait_status)) return Death{WTERMSIG(wait_status), 0};
  PPSPEC_ASSERT(WIFEXITED(wait_status));  // waitpid without WUNTRACED: stopped children are not reported
  const int status = WEXITSTATUS(wait_status);
  if (status >= 0 && status <= 3) return std::nullopt;
  return Death{0, status};
}

std::string describe(const Death& d) {
  if (d.signal != 0) return fmt::format("died of signal {} ({})", d.signal, strsignal(d.signal));
  if (d.status == kSanitizerExitStatus) return fmt::format("exited with status {} (a sanitizer's report)", d.status);
  return fmt::format("exited with status {}, which ppspec never uses", d.status);
}

}  // namespace ppspec::fuzzer
