#include "core/assert.h"

namespace ppspec::core {

void assertion_failed(const char* expression, const char* file, int line, std::string_view message) {
  std::string what = fmt::format("assertion failed at {}:{}: {}", file, line, expression);
  if (!message.empty()) what += fmt::format(" ({})", message);
  throw InternalError(what);
}

}  // namespace ppspec::core
