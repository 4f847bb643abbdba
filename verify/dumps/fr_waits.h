// The Flight Recorder checker's second half: where every rank is stuck, and whom it waits for.
//
// An operation not completed either runs (it reached its stream and waits for its partners) or is
// queued behind an earlier one of its rank. With TORCH_NCCL_ENABLE_TIMING the dump says which
// (`started` vs `scheduled`); without it, an operation is taken to run when it is the first not
// completed on its stream (PyTorch gives each process group's collectives one stream and each
// p2p pair one). A running operation waits for each partner (NCCL pairs the k-th with the k-th)
// that has not posted its counterpart, or whose counterpart is queued. Across groups these waits
// form a graph: a cycle is a deadlock; otherwise every stuck rank leads to a rank that explains
// it — one that posted everything it ever posted and never the operation the others wait at (a
// skipped call), one that did not dump, or a set of ranks all at the same operation, which no
// communication order explains (a kernel or a host that does not progress). PyTorch's analyzer
// matches group by group and never looks across them.
#pragma once

#include <string>
#include <vector>

#include "core/verdict.h"
#include "verify/dumps/fr_job.h"
#include "verify/dumps/fr_streams.h"

namespace ppspec::verify {

struct FrWaitFindings {
  // In order: a deadlock (cycle), a skipped or missing operation (fifo-misalignment, unmatched),
  // ranks waiting for one that did not dump (hang, missing-dump), a stall (hang, stalled).
  std::vector<core::Finding> findings;
  std::vector<core::Finding> notes;    // operations in flight when the dumps were taken (no fault)
  std::vector<std::string> frontiers;  // per rank: how much completed, where it stopped, whom it waits for
  size_t stuck_ranks = 0;              // ranks with an operation not completed
};

// Nothing when the dumps record no progress (Gloo): the caller says so.
FrWaitFindings check_waits(const FrJob& job, FrCalls calls);

}  // namespace ppspec::verify
