#include "sim/comm_capture.h"

#include <fmt/format.h>
#include <string>
#include <utility>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "sim/comm_connect.h"
#include "sim/graph.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

void CaptureRules::capture(PartSpec spec, GraphRec& graph) {
  reject_connect_in_capture({spec});
  // R9: captured, not posted. Each graph launch posts it anew.
  graph.items.push_back(GraphItem{true, {}, {std::move(spec)}});
}

void CaptureRules::route_group(std::vector<PartSpec>& pending, std::vector<PartSpec>& live) {
  for (PartSpec& p : pending) {
    // Whether a part is captured was decided when it was posted (registered parts are live); a
    // group that spans a capture boundary would change that under it: the loader rejects those.
    PPSPEC_ASSERT((p.stream->capture() == nullptr) == (p.id >= 0), "a group spans a capture boundary on {}",
                  p.stream->full_name());
    if (GraphRec* g = p.stream->capture()) {
      const bool merge = !g->items.empty() && g->items.back().is_comm && g->items.back().parts.front().comm == p.comm &&
                         g->items.back().parts.front().crank == p.crank;
      if (merge)
        g->items.back().parts.push_back(p);
      else
        g->items.push_back(GraphItem{true, {}, {p}});
    } else {
      live.push_back(std::move(p));
    }
  }
}

// NCCL sets a connection up at first use (R1) with device allocations and copies, which a stream
// capture forbids: the call first meets its peer, as at any first contact, then fails with
// ncclInternalError (measured on H200, NCCL 2.28.9: a captured exchange as a pair's first
// operation, or in the one direction the pair had not used yet). Real programs communicate eagerly
// before they capture (vLLM's warmup), so the connections exist by then.
void CaptureRules::reject_connect_in_capture(const std::vector<PartSpec>& parts) {
  const PartSpec* first = nullptr;
  for (const PartSpec& p : parts)
    if (p.stream->capture() != nullptr && setup_.would_set_up(p) && first == nullptr) first = &p;
  if (first == nullptr) return;
  std::vector<PartSpec> meeting(parts.begin(), parts.end());
  setup_.connect(meeting);  // the host waits for its peers first: with none, it hangs there instead
  World& w = rt_.world();
  const core::RankId rank = first->comm->members[static_cast<size_t>(first->crank)];
  core::Finding f;
  f.verdict = core::Verdict::invalid_usage;
  f.kind = core::FindingKind::connect_in_capture;
  f.summary = fmt::format(
      "{} captures {} on '{}' into a CUDA graph before this rank ever used {}: NCCL sets the connection up at first "
      "use with device allocations, which the capture forbids (ncclInternalError on H200, NCCL 2.28.9); communicate "
      "once in each direction before capturing, as a warmup step does",
      w.current().name, core::to_string(first->desc.kind), first->comm->name,
      core::is_p2p(first->desc.kind)
          ? fmt::format("that direction with rank{}", first->comm->members[static_cast<size_t>(first->peer)])
          : std::string("that communicator's collectives"));
  f.sites.push_back(core::Site{rank, w.current().name, first->comm->name, -1,
                               std::string(core::to_string(first->desc.kind)), std::string(first->origin)});
  w.stop(std::move(f));
}

}  // namespace ppspec::sim
