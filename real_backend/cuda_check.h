// CUDA, driver, NVRTC and NCCL errors become exceptions that say what failed and where.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvrtc.h>

#include <stdexcept>
#include <string>

#include "real_backend/dynamic_apis.h"

namespace ppspec::real {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// NCCL's ncclInvalidUsage: the program broke a rule NCCL checks at run time (a send to self without
// its receive in the group). A verdict of the program (`invalid-usage`), not a failure of the run.
class NcclInvalidUsage : public CudaError {
 public:
  using CudaError::CudaError;
};

// A kernel faulted (an illegal address, an illegal instruction): CUDA's error is sticky, every later
// call of the process fails with it. A verdict of the program (`device-fault`), not a failure of
// the harness.
class DeviceFault : public CudaError {
 public:
  using CudaError::CudaError;
};

// An NCCL call that failed while it was being captured into a CUDA graph with ncclInternalError:
// NCCL set a connection up at first contact, whose allocations the capture forbids. A verdict
// (`invalid-usage`, as the simulator's connect-in-capture), not a failure of the harness.
class NcclCaptureError : public CudaError {
 public:
  using CudaError::CudaError;
};

// The runtime interface carries CUDA and NCCL handles as opaque pointers (core/ stays free of CUDA's
// headers); these give them their types back.
inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
inline cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
inline ncclComm_t as_comm(void* c) { return static_cast<ncclComm_t>(c); }

// Whether the NCCL call this thread makes next is captured (a grouped call: any of the group's).
void set_nccl_call_captured(bool captured);

[[noreturn]] void throw_cuda(const char* what, const char* call, const char* file, int line);
[[noreturn]] void throw_cuda_status(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl(ncclResult_t result, const char* call, const char* file, int line);

}  // namespace ppspec::real

#define PPSPEC_CUDA(call)                                                                                \
  do {                                                                                                   \
    const cudaError_t ppspec_e = (call);                                                                 \
    if (ppspec_e != cudaSuccess) ::ppspec::real::throw_cuda_status(ppspec_e, #call, __FILE__, __LINE__); \
  } while (0)

#define PPSPEC_CU(call)                                                \
  do {                                                                 \
    const CUresult ppspec_e = (call);                                  \
    if (ppspec_e != CUDA_SUCCESS) {                                    \
      const char* ppspec_s = "unknown driver error";                   \
      ::ppspec::real::driver().GetErrorString(ppspec_e, &ppspec_s);    \
      ::ppspec::real::throw_cuda(ppspec_s, #call, __FILE__, __LINE__); \
    }                                                                  \
  } while (0)

#define PPSPEC_NCCL(call)                                                                         \
  do {                                                                                            \
    const ncclResult_t ppspec_e = (call);                                                         \
    if (ppspec_e != ncclSuccess) ::ppspec::real::throw_nccl(ppspec_e, #call, __FILE__, __LINE__); \
  } while (0)

#define PPSPEC_NVRTC(call)                                                                                     \
  do {                                                                                                         \
    const nvrtcResult ppspec_e = (call);                                                                       \
    if (ppspec_e != NVRTC_SUCCESS)                                                                             \
      ::ppspec::real::throw_cuda(::ppspec::real::nvrtc().GetErrorString(ppspec_e), #call, __FILE__, __LINE__); \
  } while (0)
