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

}  // namespace ppspec::verify
