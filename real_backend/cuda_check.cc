#include "real_backend/cuda_check.h"

#include <fmt/format.h>

namespace ppspec::real {

void throw_cuda(const char* what, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} ({}:{})", call, what, file, line));
}

namespace {

// CUDA's sticky errors: a kernel of the process faulted, and every later call fails with it.
bool sticky(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchFailure: return true;
    default: return false;
  }
}

}  // namespace

void throw_cuda_status(cudaError_t status, const char* call, const char* file, int line) {
  const std::string what = fmt::format("{} failed: {} ({}:{})", call, cudaGetErrorString(status), file, line);
  if (sticky(status)) throw DeviceFault(what);
  throw CudaError(what);
}

namespace {
thread_local bool t_nccl_call_captured = false;
}  // namespace

void set_nccl_call_captured(bool captured) { t_nccl_call_captured = captured; }

void throw_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  const std::string what = fmt::format("{} failed: {} ({}:{})", call, ncclGetErrorString(result), file, line);
  if (result == ncclInvalidUsage) throw NcclInvalidUsage(what);
  if (result == ncclInternalError && t_nccl_call_captured) throw NcclCaptureError(what);
  throw CudaError(what);
}

}  // namespace ppspec::real
