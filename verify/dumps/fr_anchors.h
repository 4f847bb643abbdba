// Where in a p2p channel an operation was skipped, when the sides' counts differ and their data
// cannot tell (every send alike). Each send and receive is anchored in its rank's record order by
// how many collectives of each group the two ranks share came before it; from the skipped one on,
// the short side's k-th lines up with the long side's (k+1)-th. A hint in words, or nothing.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

std::optional<std::string> locate_skipped_p2p(const FrJob& job, const FrChannel& channel);

// Which side broke a channel where its sides part one apart (one side's extra operation and the
// other's skipped one look alike on the channel): each side's operations anchored by the collectives
// of a group both ranks belong to come one per anchor step; the side that breaks its own step — two
// operations in one step (an extra), or a step with none (a skipped one) — is the one.
struct FrChannelBlame {
  bool sender = false;  // the sending side broke it (else the receiving side)
  bool extra = false;   // by an extra operation (else by a skipped one)
  size_t at = 0;        // where: the breaking side's operation (extra) or where its skipped one belongs
  std::string words;
};
std::optional<FrChannelBlame> anchored_blame(const FrJob& job, const FrChannel& c, std::span<const FrOp> sends,
                                             std::span<const FrOp> recvs);
// The same for a group's collectives, where member `short_rank` posted fewer than `long_rank`, all
// alike: anchored by the collectives of the other groups both belong to.
std::optional<std::string> locate_skipped_collective(const FrJob& job, size_t group, int short_rank, int long_rank);

}  // namespace ppspec::verify
