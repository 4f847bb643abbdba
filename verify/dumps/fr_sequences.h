// The Flight Recorder checker's first half: each process group's collectives and each p2p
// channel's sends and receives compared across their members (NCCL pairs the k-th with the k-th),
// one finding per root cause (core/sequence_cause.h), not one per shifted position.
#pragma once

#include <cstdint>
#include <vector>

#include "core/verdict.h"
#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

struct FrSequenceFindings {
  std::vector<core::Finding> findings;  // fifo-misalignment: collective-mismatch, p2p-mismatch
  // Sends that completed though no receive was ever posted (eager): a misalignment that stops
  // nothing by itself, so it comes after what does (earliest posted first).
  struct Posted {
    int64_t created_ns = 0;  // when the operation was posted: the order of these findings
    core::Finding finding;
  };
  std::vector<Posted> unmatched_completed;
  std::vector<core::Finding> notes;   // what was not compared, and why (wrapped ring buffers)
  uint64_t collectives_compared = 0;  // positions of groups compared across their dumped members
  uint64_t p2p_pairs = 0;             // sends paired with their receives
};

// At most this many causes per group or channel: past them the rest is read as noise of the first.
inline constexpr size_t kFrCausesPerSequence = 8;

FrSequenceFindings check_sequences(const FrJob& job);

}  // namespace ppspec::verify
