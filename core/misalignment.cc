#include "core/misalignment.h"

#include <fmt/format.h>

namespace ppspec::core {

std::optional<Finding> misalignment(const PostedOp& a, const PostedOp& b, std::string_view comm, int64_t cseq, bool p2p) {
  const std::string why = mismatch_reason(a.desc, b.desc);
  if (why.empty()) return std::nullopt;
  Finding f;
  f.verdict = Verdict::fifo_misalignment;
  f.kind = p2p ? "p2p-mismatch" : "collective-mismatch";
  const std::string where = p2p ? fmt::format("send #{} rank{}->rank{}", cseq, a.rank, b.rank) : fmt::format("collective #{}", cseq);
  f.summary = fmt::format("{} on '{}' pairs mismatched operations: {}", where, comm, why);
  for (const PostedOp* r : {&a, &b}) {
    f.sites.push_back(Site{r->rank, std::string(r->actor), std::string(comm), cseq, describe(r->desc), std::string(r->origin)});
    // Which side of the data each party is on: a broadcast's root sends, every other member receives.
    const bool sends = r->desc.kind == OpKind::send || (r->desc.kind == OpKind::broadcast && r->desc.peer == r->rank);
    const bool receives = r->desc.kind == OpKind::recv || (r->desc.kind == OpKind::broadcast && r->desc.peer != r->rank);
    const char* role = sends ? "sends:" : receives ? "receives:" : "posted";
    f.details.push_back(fmt::format("rank{} {} {} {} (op {}){}", r->rank, r->actor, role, describe(r->desc), r->op_id,
                                    r->origin.empty() ? "" : fmt::format(" at {}", r->origin)));
    // The earliest step either operation was posted for: where the sequences parted.
    if (r->desc.label.step >= 0 && (f.engine_step < 0 || r->desc.label.step < f.engine_step)) f.engine_step = r->desc.label.step;
  }
  f.details.push_back(
      "NCCL matches operations by position only (no tags, no size check): from here on data goes to the wrong "
      "operation, or a receiver waits for units that never come (R3, R5)");
  return f;
}

}  // namespace ppspec::core
