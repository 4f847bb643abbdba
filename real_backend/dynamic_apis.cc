#include "real_backend/dynamic_apis.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <fmt/format.h>
#include <mutex>

#include "real_backend/cuda_check.h"

namespace ppspec::real {
namespace {

template <typename F>
void entry(const char* symbol, F& out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || fn == nullptr)
    throw CudaError(fmt::format("the CUDA driver has no {} ({})", symbol, cudaGetErrorString(e)));
  out = reinterpret_cast<F>(fn);
}

template <typename F>
void symbol(void* lib, const char* name, F& out) {
  void* fn = dlsym(lib, name);
  if (fn == nullptr) throw CudaError(fmt::format("NVRTC has no {}", name));
  out = reinterpret_cast<F>(fn);
}

}  // namespace

const DriverApi& driver() {
  static DriverApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    entry("cuModuleLoadData", api.ModuleLoadData);
    entry("cuModuleGetFunction", api.ModuleGetFunction);
    entry("cuLaunchKernel", api.LaunchKernel);
    entry("cuGetErrorString", api.GetErrorString);
  });
  return api;
}

const NvrtcApi& nvrtc() {
  static NvrtcApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = nullptr;
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (lib == nullptr)
      throw CudaError("jit module loading needs NVRTC (libnvrtc.so.13): add its folder to LD_LIBRARY_PATH");
    symbol(lib, "nvrtcCreateProgram", api.CreateProgram);
    symbol(lib, "nvrtcCompileProgram", api.CompileProgram);
    symbol(lib, "nvrtcGetPTXSize", api.GetPTXSize);
    symbol(lib, "nvrtcGetPTX", api.GetPTX);
    symbol(lib, "nvrtcGetProgramLogSize", api.GetProgramLogSize);
    symbol(lib, "nvrtcGetProgramLog", api.GetProgramLog);
    symbol(lib, "nvrtcDestroyProgram", api.DestroyProgram);
    symbol(lib, "nvrtcGetErrorString", api.GetErrorString);
  });
  return api;
}

}  // namespace ppspec::real
