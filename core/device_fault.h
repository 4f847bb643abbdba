// A kernel that touched memory outside a buffer. On a GPU that is an illegal memory access: CUDA's
// sticky error ends the process's GPU work (verdict device-fault). The simulator's bounds-checked
// spans (kernels/span.h) see the same access and end the run with the same verdict, naming the
// rank, the kernel, the engine step, the row and the index against the buffer's range — never as
// an internal error of ppspec.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/types.h"

namespace ppspec::core {

class DeviceFault : public std::runtime_error {
 public:
  DeviceFault(RankId rank, std::string kernel, int64_t row, std::string access)
      : std::runtime_error("rank" + std::to_string(rank) + " kernel " + kernel + ", row " + std::to_string(row) + ": " +
                           access),
        rank_(rank),
        kernel_(std::move(kernel)),
        row_(row),
        access_(std::move(access)) {}
  RankId rank() const { return rank_; }
  const std::string& kernel() const { return kernel_; }
  int64_t row() const { return row_; }
  const std::string& access() const { return access_; }  // "index 40 outside [0, 32)"

 private:
  RankId rank_;
  std::string kernel_;
  int64_t row_;
  std::string access_;
};

}  // namespace ppspec::core
