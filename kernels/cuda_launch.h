// CUDA launchers of the engine's row kernels (built whenever the CUDA toolkit is found). Each
// maps rows to threads; the row functions are the ones the simulator runs on the CPU.
#pragma once

#include <cstdint>

#include "kernels/drafter.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/rejection_sample.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels::cuda {

void launch(const EmbedKernel& k, int64_t rows, void* stream);
void launch(const ContextSumKernel& k, int64_t rows, void* stream);
void launch(const LayerPartialKernel& k, int64_t rows, void* stream);
void launch(const LayerKvWriteKernel& k, int64_t rows, void* stream);
void launch(const LayerOutKernel& k, int64_t rows, void* stream);
void launch(const HeadPartialKernel& k, int64_t rows, void* stream);
void launch(const LogitsKernel& k, int64_t rows, void* stream);
void launch(const RejectionSampleKernel& k, int64_t rows, void* stream);
void launch(const PrepareInputsKernel& k, int64_t rows, void* stream);
void launch(const PostUpdateKernel& k, int64_t rows, void* stream);
void launch(const PrepareDflashInputsKernel& k, int64_t rows, void* stream);
void launch(const TopkSoftplusSqrtKernel& k, int64_t rows, void* stream);
void launch(const DraftContextKvKernel& k, int64_t rows, void* stream);
void launch(const DraftForwardKernel& k, int64_t rows, void* stream);
void launch(const DraftGateKernel& k, int64_t rows, void* stream);
void launch(const DraftExpertsKernel& k, int64_t rows, void* stream);

}  // namespace ppspec::kernels::cuda
