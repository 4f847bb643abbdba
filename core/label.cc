#include "core/label.h"

#include <fmt/format.h>

namespace ppspec::core {

std::string Label::str() const {
  if (step < 0) return std::string(name);
  return fmt::format("{}@step{}", name, step);
}

}  // namespace ppspec::core
