#include "real_backend/cuda_check.h"

#include <fmt/format.h>

namespace ppspec::real {

void throw_cuda(const char* what, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} ({}:{})", call, what, file, line));
}

void throw_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  const std::string what = fmt::format("{} failed: {} ({}:{})", call, ncclGetErrorString(result), file, line);
  if (result == ncclInvalidUsage) throw NcclInvalidUsage(what);
  throw CudaError(what);
}

}  // namespace ppspec::real
