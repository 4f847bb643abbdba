// Where in a p2p channel an operation was skipped, when the sides' counts differ and their data
// cannot tell (every send alike). Each send and receive is anchored in its rank's record order by
// how many collectives of each group the two ranks share came before it; from the skipped one on,
// the short side's k-th lines up with the long side's (k+1)-th. A hint in words, or nothing.
#pragma once

#include <optional>
#include <string>

#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

std::optional<std::string> locate_skipped_p2p(const FrJob& job, const FrChannel& channel);
// The same for a group's collectives, where member `short_rank` posted fewer than `long_rank`, all
// alike: anchored by the collectives of the other groups both belong to.
std::optional<std::string> locate_skipped_collective(const FrJob& job, size_t group, int short_rank, int long_rank);

}  // namespace ppspec::verify
