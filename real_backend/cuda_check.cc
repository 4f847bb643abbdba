#include "real_backend/cuda_check.h"

#include <fmt/format.h>

namespace ppspec::real {

void throw_cuda(const char* what, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} ({}:{})", call, what, file, line));
}

}  // namespace ppspec::real
