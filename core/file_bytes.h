// Reading a whole input file: one place for the ways it can fail (absent, a folder, a read error).
#pragma once

#include <string>

namespace ppspec::core {

struct FileBytes {
  std::string bytes;
  std::string error;  // why the file could not be read, in words; empty: it was read
  bool ok() const { return error.empty(); }
};

FileBytes read_file_bytes(const std::string& path);

// The file's bytes, or an InputError naming it and why it could not be read.
std::string file_bytes_or_throw(const std::string& path);

}  // namespace ppspec::core
