// CUDA launchers of the engine's row kernels: each maps rows to threads and runs the same row
// function the simulator runs on the CPU. Defined in engine_kernels.cu when the CUDA toolkit is
// found; otherwise cuda_launch_stub.cc defines them to fail (the real backend is not built then,
// so nothing calls them).
#pragma once

#include <cstdint>

#include "kernels/drafter.h"
#include "kernels/engine_kernel_list.h"
#include "kernels/feedback_payload.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/eagle.h"
#include "kernels/expert_dispatch.h"
#include "kernels/kv_transfer.h"
#include "kernels/mla_attention.h"
#include "kernels/recurrent.h"
#include "kernels/rejection_sample.h"
#include "kernels/request_tables.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"
#include "kernels/write_check.h"

namespace ppspec::kernels::cuda {

// launch: enqueue over `rows` rows on the cudaStream_t; preload: load the kernel's module now.
#define PPSPEC_DECLARE_CUDA_LAUNCHER(K)                \
  void launch(const K& k, int64_t rows, void* stream); \
  void preload(const K& k);
PPSPEC_ENGINE_KERNELS(PPSPEC_DECLARE_CUDA_LAUNCHER)
#undef PPSPEC_DECLARE_CUDA_LAUNCHER

}  // namespace ppspec::kernels::cuda
