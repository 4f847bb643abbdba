#include "real_backend/cuda_check.h"

#include <fmt/format.h>

namespace ppspec::real {

void throw_cuda(const char* what, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("{} failed: {} ({}:{})", call, what, file, line));
}

void throw_cuda_status(cudaError_t status, const char* call, const char* file, int line) {
  const std::string what = fmt::format("{} failed: {} ({}:{})", call, cudaGetErrorString(status), file, line);
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchFailure: throw DeviceFault(what);
    default: throw CudaError(what);
  }
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
