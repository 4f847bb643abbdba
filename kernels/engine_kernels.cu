#include <cuda_runtime.h>

#include "kernels/cuda_launch.h"
#include "kernels/launch.h"

namespace ppspec::kernels::cuda {

#define PPSPEC_CUDA_LAUNCHER(K) \
  void launch(const K& k, int64_t rows, void* stream) { run_on_gpu(k, rows, stream); }

PPSPEC_CUDA_LAUNCHER(EmbedKernel)
PPSPEC_CUDA_LAUNCHER(ContextSumKernel)
PPSPEC_CUDA_LAUNCHER(LayerPartialKernel)
PPSPEC_CUDA_LAUNCHER(LayerKvWriteKernel)
PPSPEC_CUDA_LAUNCHER(LayerOutKernel)
PPSPEC_CUDA_LAUNCHER(HeadPartialKernel)
PPSPEC_CUDA_LAUNCHER(LogitsKernel)
PPSPEC_CUDA_LAUNCHER(RejectionSampleKernel)
PPSPEC_CUDA_LAUNCHER(PrepareInputsKernel)
PPSPEC_CUDA_LAUNCHER(PostUpdateKernel)
PPSPEC_CUDA_LAUNCHER(PrepareDflashInputsKernel)
PPSPEC_CUDA_LAUNCHER(TopkSoftplusSqrtKernel)
PPSPEC_CUDA_LAUNCHER(DraftContextKvKernel)
PPSPEC_CUDA_LAUNCHER(DraftForwardKernel)
PPSPEC_CUDA_LAUNCHER(DraftGateKernel)
PPSPEC_CUDA_LAUNCHER(DraftExpertsKernel)

}  // namespace ppspec::kernels::cuda
