// Bad input is reported with the file, the line and what was expected; never a crash.
#pragma once

#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <utility>

namespace ppspec::core {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int line, std::string message)
      : std::runtime_error(format(file, line, message)), file_(std::move(file)), line_(line) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  static std::string format(const std::string& file, int line, const std::string& message) {
    if (line > 0) return file + ":" + std::to_string(line) + ": " + message;
    return file.empty() ? message : file + ": " + message;  // input of no file (a job as a whole)
  }
  std::string file_;
  int line_;
};

// A run that would need more than the machine running it can give (simulated device memory beyond
// its budget): refused before it runs, like bad input.
class CapacityError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws E with a formatted message from a function of its own, out of line and cold: a hot
// look-up that rejects a bad argument keeps the formatting out of its own frame.
template <typename E, typename... Args>
[[noreturn, gnu::cold, gnu::noinline]] void throw_formatted(fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ppspec::core
