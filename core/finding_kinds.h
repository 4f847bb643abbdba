// The kinds of finding ppspec reports, each under the one verdict it decides. A finding's `kind`
// says *why* a verdict was given (`gate-disagreement` and `collective-mismatch` are both
// `fifo-misalignment`), so a scenario pins it with `[expect] kind` and the loader checks the name
// against this table: a misspelt kind is an input error, not a run that can never meet its
// expectation. Hazard kinds live in core/hazard_kinds.h and are listed here under `hazard` too.
#pragma once

#include <array>
#include <string_view>

#include "core/hazard_kinds.h"
#include "core/verdict.h"

namespace ppspec::core {

// fifo-misalignment
inline constexpr std::string_view kKindCollectiveMismatch = "collective-mismatch";
inline constexpr std::string_view kKindP2pMismatch = "p2p-mismatch";
inline constexpr std::string_view kKindGateDisagreement = "gate-disagreement";
inline constexpr std::string_view kKindDecisionDisagreement = "decision-disagreement";
inline constexpr std::string_view kKindUnmatched = "unmatched";
// deadlock
inline constexpr std::string_view kKindCycle = "cycle";
inline constexpr std::string_view kKindStuck = "stuck";
// stale-draft
inline constexpr std::string_view kKindDraftFreshness = "draft-freshness";
inline constexpr std::string_view kKindDraftRelay = "draft-relay";
// padding-violation, embedding-violation
inline constexpr std::string_view kKindPadding = "padding";
inline constexpr std::string_view kKindEmbedding = "embedding";
// output-divergence
inline constexpr std::string_view kKindGolden = "golden";
inline constexpr std::string_view kKindPpInvariance = "pp-invariance";
inline constexpr std::string_view kKindPaddingInvariance = "padding-invariance";
inline constexpr std::string_view kKindSimGpu = "sim-gpu";
inline constexpr std::string_view kKindDrafterOracle = "drafter-oracle";
inline constexpr std::string_view kKindAcceptance = "acceptance";
inline constexpr std::string_view kKindStageOutput = "stage-output";
inline constexpr std::string_view kKindGreedySample = "greedy-sample";
// race
inline constexpr std::string_view kKindStreamRace = "stream-race";
// the host touched pinned memory that a copy's DMA (or a kernel) may be using (core/runtime.h)
inline constexpr std::string_view kKindPinnedHostRace = "pinned-host-race";
// stage-divergence
inline constexpr std::string_view kKindStagePosition = "stage-position";
inline constexpr std::string_view kKindStageToken = "stage-token";
inline constexpr std::string_view kKindStageDrafts = "stage-drafts";
inline constexpr std::string_view kKindStageAdoption = "stage-adoption";
inline constexpr std::string_view kKindFeedbackDropped = "feedback-dropped";
inline constexpr std::string_view kKindSchedulingCadence = "scheduling-cadence";
// kv-violation
inline constexpr std::string_view kKindKvOwnership = "kv-ownership";
inline constexpr std::string_view kKindKvOutOfTable = "kv-out-of-table";
// leak
inline constexpr std::string_view kKindBlocksLeaked = "blocks-leaked";
inline constexpr std::string_view kKindRequestLeaked = "request-leaked";
inline constexpr std::string_view kKindAbortIgnored = "abort-ignored";
// pipeline-bubble
inline constexpr std::string_view kKindPipelineBubble = "pipeline-bubble";
// nondeterminism, step-limit, hang, invalid-usage, device-fault
inline constexpr std::string_view kKindReplayDiverged = "replay-diverged";
inline constexpr std::string_view kKindStepLimit = "step-limit";
inline constexpr std::string_view kKindTimeLimit = "time-limit";
inline constexpr std::string_view kKindWatchdog = "watchdog";
// hang, from Flight Recorder dumps: ranks all at one operation that does not complete (nothing in the
// communication order explains it); ranks waiting for one that did not dump
inline constexpr std::string_view kKindStalled = "stalled";
inline constexpr std::string_view kKindMissingDump = "missing-dump";
// hang, from a live job's plugin traces: calls NCCL never launched (a group that never ended, a
// communicator a member never initialised)
inline constexpr std::string_view kKindNeverLaunched = "never-launched";
// hazard, from Flight Recorder dumps: a member of a group in use left no dump (nothing it did is checked)
inline constexpr std::string_view kKindUncheckedRank = "unchecked-rank";
// hazard, from plugin traces: records lost (a ring or a pool overflowed) or a plugin that turned itself off
inline constexpr std::string_view kKindIncompleteTrace = "incomplete-trace";
inline constexpr std::string_view kKindConnectInCapture = "connect-in-capture";
inline constexpr std::string_view kKindUnmatchedSelfP2p = "unmatched-self-p2p";
inline constexpr std::string_view kKindNcclInvalidUsage = "nccl-invalid-usage";
inline constexpr std::string_view kKindCaptureConflict = "capture-conflict";
inline constexpr std::string_view kKindCaptureUnsafeCall = "capture-unsafe-call";
inline constexpr std::string_view kKindDeviceFault = "device-fault";

// notes (verdict pass): what a reader could not judge or assumed, said beside the verdict
inline constexpr std::string_view kNoteP2pDataLost = "p2p-data-lost";
inline constexpr std::string_view kNoteRingBufferWrapped = "ring-buffer-wrapped";
inline constexpr std::string_view kNoteP2pNotAligned = "p2p-not-aligned";
inline constexpr std::string_view kNoteP2pAlignedByPattern = "p2p-aligned-by-pattern";
inline constexpr std::string_view kNoteNoProgressRecorded = "no-progress-recorded";
inline constexpr std::string_view kNoteGroupsFromEntries = "groups-from-entries";
inline constexpr std::string_view kNoteExecutionModel = "execution-model";
inline constexpr std::string_view kNoteInFlight = "in-flight";
inline constexpr std::string_view kNoteTornLine = "torn-line";
inline constexpr std::string_view kNoteCallsOnly = "calls-only";
inline constexpr std::string_view kNoteRecordedVerdict = "recorded-verdict";

struct FindingKindName {
  Verdict verdict;
  std::string_view name;
};

inline constexpr std::array<FindingKindName, 54> kFindingKinds{{
    {Verdict::fifo_misalignment, kKindCollectiveMismatch},
    {Verdict::fifo_misalignment, kKindP2pMismatch},
    {Verdict::fifo_misalignment, kKindGateDisagreement},
    {Verdict::fifo_misalignment, kKindDecisionDisagreement},
    {Verdict::fifo_misalignment, kKindUnmatched},
    {Verdict::deadlock, kKindCycle},
    {Verdict::deadlock, kKindStuck},
    {Verdict::hazard, kHazardModuleLoadInFlight},
    {Verdict::hazard, kHazardMallocInFlight},
    {Verdict::hazard, kHazardDeviceSyncInFlight},
    {Verdict::hazard, kHazardCrossCommunicatorOrder},
    {Verdict::hazard, kHazardFeedbackDuringWarmup},
    {Verdict::hazard, kHazardModuleLoadAfterWarmup},
    {Verdict::stale_draft, kKindDraftFreshness},
    {Verdict::stale_draft, kKindDraftRelay},
    {Verdict::padding_violation, kKindPadding},
    {Verdict::embedding_violation, kKindEmbedding},
    {Verdict::output_divergence, kKindGolden},
    {Verdict::output_divergence, kKindPpInvariance},
    {Verdict::output_divergence, kKindStageOutput},
    {Verdict::output_divergence, kKindGreedySample},
    {Verdict::output_divergence, kKindPaddingInvariance},
    {Verdict::output_divergence, kKindSimGpu},
    {Verdict::output_divergence, kKindDrafterOracle},
    {Verdict::output_divergence, kKindAcceptance},
    {Verdict::race, kKindStreamRace},
    {Verdict::race, kKindPinnedHostRace},
    {Verdict::stage_divergence, kKindStagePosition},
    {Verdict::stage_divergence, kKindStageToken},
    {Verdict::stage_divergence, kKindStageDrafts},
    {Verdict::stage_divergence, kKindStageAdoption},
    {Verdict::stage_divergence, kKindFeedbackDropped},
    {Verdict::stage_divergence, kKindSchedulingCadence},
    {Verdict::kv_violation, kKindKvOwnership},
    {Verdict::kv_violation, kKindKvOutOfTable},
    {Verdict::leak, kKindBlocksLeaked},
    {Verdict::leak, kKindRequestLeaked},
    {Verdict::leak, kKindAbortIgnored},
    {Verdict::pipeline_bubble, kKindPipelineBubble},
    {Verdict::nondeterminism, kKindReplayDiverged},
    {Verdict::step_limit, kKindStepLimit},
    {Verdict::step_limit, kKindTimeLimit},
    {Verdict::hang, kKindWatchdog},
    {Verdict::hang, kKindStalled},
    {Verdict::hang, kKindMissingDump},
    {Verdict::hazard, kKindUncheckedRank},
    {Verdict::hang, kKindNeverLaunched},
    {Verdict::hazard, kKindIncompleteTrace},
    {Verdict::invalid_usage, kKindConnectInCapture},
    {Verdict::invalid_usage, kKindUnmatchedSelfP2p},
    {Verdict::invalid_usage, kKindNcclInvalidUsage},
    {Verdict::invalid_usage, kKindCaptureConflict},
    {Verdict::invalid_usage, kKindCaptureUnsafeCall},
    {Verdict::device_fault, kKindDeviceFault},
}};

}  // namespace ppspec::core
