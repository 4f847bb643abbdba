// Flight Recorder dumps checked for root causes (`ppspec check DIR`): each process group's
// collectives in collective_seq_id order, and each pair's p2p operations in p2p_seq_id order, must
// match across ranks (NCCL pairs by position only). One finding per root cause, not per cascade:
// where one rank posted an extra operation (or missed one), every later collective of the group is
// shifted by one, and those are the same cause; the finding names the culprit rank and what it did,
// then which ranks are stuck where (scheduled / started / completed). PyTorch's analyzer reports the
// first mismatch and then every later collective again.
#pragma once

#include <vector>

#include "core/verdict.h"
#include "traces/flight_recorder.h"

namespace ppspec::verify {

// Verdict fifo-misalignment (kinds collective-mismatch, p2p-mismatch) or pass; every rank's
// completion in the notes of a clean run.
core::RunResult check_flight_recorder(const std::vector<traces::FrDump>& dumps);

}  // namespace ppspec::verify
