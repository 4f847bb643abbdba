// Every engine kernel, once: the CUDA launchers are declared (cuda_launch.h), defined (one
// generated translation unit per kernel, kernels/CMakeLists.txt) and stubbed (cuda_launch_stub.cc)
// from this list, so a kernel cannot have a CPU launcher only. One X(...) per line: CMake reads it.
#pragma once

#define PPSPEC_ENGINE_KERNELS(X) \
  X(EmbedKernel)                 \
  X(ContextSumKernel)            \
  X(LayerPartialKernel)          \
  X(LayerKvWriteKernel)          \
  X(LayerOutKernel)              \
  X(HeadPartialKernel)           \
  X(LogitsKernel)                \
  X(RejectionSampleKernel)       \
  X(PrepareInputsKernel)         \
  X(PostUpdateKernel)            \
  X(DeferredPostUpdateKernel)    \
  X(PrepareDflashInputsKernel)   \
  X(TopkSoftplusSqrtKernel)      \
  X(DraftContextKvKernel)        \
  X(DraftContextKvRangesKernel)  \
  X(DflashGatherKernel)          \
  X(DraftForwardKernel)          \
  X(DraftGateKernel)             \
  X(DraftExpertsKernel)          \
  X(ConfidenceToFixedKernel)     \
  X(PackPayloadKernel)           \
  X(UnpackPayloadKernel)         \
  X(AdvanceNumComputedKernel)    \
  X(GatherSamplingParamsKernel)  \
  X(GatherBlockRowsKernel)       \
  X(SetDraftTokensKernel)        \
  X(GatherDraftsKernel)          \
  X(RestoreUnwrittenKernel)      \
  X(SaveAndPoisonKernel)         \
  X(RestoreUnwrittenBandsKernel) \
  X(RecurrentLayerKernel)        \
  X(RecurrentCommitKernel)       \
  X(RecurrentResetKernel)        \
  X(TapKernel)                   \
  X(EagleStepKernel)             \
  X(EpDispatchPackKernel)        \
  X(EpExpertsKernel)             \
  X(EpCombineKernel)             \
  X(DummyQueryRowsKernel)        \
  X(KvGatherKernel)              \
  X(KvInjectKernel)              \
  X(DecodeSeqLensKernel)         \
  X(MlaDecodeAttentionKernel)    \
  X(MlaPrefillAttentionKernel)
