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
    f.details.push_back(fmt::format("rank{} {} posted {} (op {}){}", r->rank, r->actor, describe(r->desc), r->op_id,
                                    r->origin.empty() ? "" : fmt::format(" at {}", r->origin)));
  }
  f.details.push_back(
      "NCCL matches operations by position only (no tags, no size check): from here on data goes to the wrong "
      "operation, or a receiver waits for units that never come (R3, R5)");
  return f;
}

}  // namespace ppspec::core
