// Assertions that state invariants where they hold. Unlike <cassert> they survive NDEBUG: a broken
// invariant in a verification tool must never turn into a silent wrong answer. A failure throws
// InternalError, which the command line reports as an internal error (exit 3); inside a simulated
// run the world stops and rethrows it from run().
#pragma once

#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ppspec::core {

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void assertion_failed(const char* expression, const char* file, int line, std::string_view message);

}  // namespace ppspec::core

// The failure path is a lambda of its own, out of line and cold: the message's formatting stays
// out of the function that asserts, whose frame and registers stay those of its fast path.
#define PPSPEC_ASSERT(condition, ...)                                                                                  \
  do {                                                                                                                 \
    if (!(condition)) [[unlikely]]                                                                                     \
      [&]() __attribute__((noinline, cold, noreturn)) {                                                                \
        ::ppspec::core::assertion_failed(#condition, __FILE__, __LINE__, ::ppspec::core::assert_message(__VA_ARGS__)); \
      }                                                                                                                \
    ();                                                                                                                \
  } while (0)

namespace ppspec::core {
inline std::string assert_message() { return {}; }
template <typename... Args>
std::string assert_message(fmt::format_string<Args...> f, Args&&... args) {
  return fmt::format(f, std::forward<Args>(args)...);
}
}  // namespace ppspec::core
