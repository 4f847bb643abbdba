// The fifo-misalignment finding: positionally paired operations that disagree. Built the same way
// by the simulator (at the pairing) and by the checker of recorded traces.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
std::optional<Finding> misalignment(const PostedOp& a, const PostedOp& b, std::string_view comm, int64_t cseq,
                                    bool p2p);

// Whether a post of a collective slot disagrees with the posts before it, knowing only the slot's
// first post and its first post that carries a label (null: none yet). The fields compared exactly
// (kind, dtype, count, root, capture state) must equal the first's; an unlabelled operation claims
// nothing, so a label must equal the first label. Agreeing with both is agreeing with every post.
bool disagrees(const OpDesc& first, const OpDesc* first_labelled, const OpDesc& next);

// Every post of one collective slot, `posts[0]` the slot's first poster; `members` the
// communicator's size and `missing` those of its members that have not posted the slot (yet, or
// at all). nullopt when every post agrees. Among three or more members the report says which
// ranks agree, which rank is the odd one out and which rank posted what, so that a reader knows
// whose code to look at; with two it is misalignment(posts[0], posts[1]).
std::optional<Finding> collective_misalignment(std::span<const PostedOp> posts, size_t members,
                                               std::span<const RankId> missing, std::string_view comm, int64_t cseq);

// "rank 2", "ranks 0,1,3", "ranks 0-511,513-1023": sorted, consecutive ranks as ranges, at most
// kFindingListMax ranges (then "… N ranks in all").
std::string rank_list(std::vector<RankId> ranks);

}  // namespace ppspec::core
