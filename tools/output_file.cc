#include "tools/output_file.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace ppspec::tools {

void write_output_file(const std::string& path, const std::string& text, bool force) {
  if (std::filesystem::exists(path) && !force)
    throw core::InputError(path, 0, "already exists (--force overwrites it)");
  std::ofstream f(path, std::ios::trunc | std::ios::binary);
  f << text;
  f.close();
  if (!f) throw core::InputError(path, 0, "cannot be written");
}

}  // namespace ppspec::tools
