#include "tests/scratch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <system_error>

namespace ppspec::testing {
namespace {

std::filesystem::path scratch_root() {
  return std::filesystem::temp_directory_path() / ("ppspec-test-" + std::to_string(::getpid()));
}

// Removes the scratch folder after the last test of the process.
class ScratchCleanup final : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;  // a folder never made, or already gone
    std::filesystem::remove_all(scratch_root(), ignored);
  }
};

[[maybe_unused]] ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

}  // namespace

std::filesystem::path scratch_path(const std::string& name) {
  const std::filesystem::path root = scratch_root();
  std::filesystem::create_directories(root);
  return root / name;
}

}  // namespace ppspec::testing
