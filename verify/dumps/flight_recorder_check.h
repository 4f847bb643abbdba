// Flight Recorder dumps checked for root causes (`ppspec check DIR`), for any number of ranks and
// process groups. Two halves: each group's collectives and each p2p channel compared across their
// members, one finding per root cause rather than one per shifted position (verify/dumps/fr_sequences.h);
// then, where no misalignment explains the operations left not completed, where each rank is stuck
// and whom it waits for, across groups (verify/dumps/fr_waits.h). Never `pass` when an operation did not
// complete, when a member left no dump, or when the dumps hold nothing.
#pragma once

#include <vector>

#include "core/verdict.h"
#include "traces/flight_recorder.h"
#include "verify/dumps/fr_streams.h"

namespace ppspec::verify {

struct FrCheckOptions {
  FrCalls calls = FrCalls::synchronous;  // the execution model (verify/dumps/fr_streams.h)
};

// Verdict fifo-misalignment (collective-mismatch, p2p-mismatch, unmatched), deadlock (cycle), hang
// (stalled, missing-dump), hazard (unchecked-rank) or pass; every rank's frontier in the details.
// The notes say what was assumed and what could not be judged (the execution model, wrapped rings,
// groups read from the entries, dumps that record no progress or no p2p, operations in flight).
// Throws core::InputError when no dump holds an entry (nothing to check).
core::RunResult check_flight_recorder(const std::vector<traces::FrDump>& dumps, const FrCheckOptions& options = {});

}  // namespace ppspec::verify
