#include "tools/bad_input.h"

namespace ppspec::tools {

int report_bad_input(std::ostream& err, const core::InputError& e, std::string_view program) {
  err << program << ": " << e.what() << '\n';
  return kExitBadInput;
}

}  // namespace ppspec::tools
