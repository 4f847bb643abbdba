#include "core/file_bytes.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ppspec::core {

FileBytes read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return {"", "cannot read the file: it is a directory"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {"", std::string("cannot open the file: ") + std::strerror(errno)};
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return {"", std::string("cannot read the file: ") + std::strerror(errno)};
  return {ss.str(), ""};
}

std::string file_bytes_or_throw(const std::string& path) {
  FileBytes f = read_file_bytes(path);
  if (!f.ok()) throw InputError(path, 0, f.error);
  return std::move(f.bytes);
}

}  // namespace ppspec::core
