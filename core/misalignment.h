// The fifo-misalignment finding: two positionally paired operations that disagree. Built the same
// way by the simulator (at the pairing) and by the checker of recorded traces.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/op.h"
#include "core/verdict.h"

namespace ppspec::core {

struct PostedOp {
  int64_t op_id = -1;
  OpDesc desc;
  RankId rank = -1;
  std::string_view actor;   // stream, e.g. "rank0.side"
  std::string_view origin;  // where the program posted it, if known
};

// nullopt when the two agree. For p2p pairs `a` is the send and `b` the recv; for a collective `a`
// is the slot's first poster and `b` a later one.
std::optional<Finding> misalignment(const PostedOp& a, const PostedOp& b, std::string_view comm, int64_t cseq, bool p2p);

}  // namespace ppspec::core
