#include "engine/communicators.h"

#include <fmt/format.h>

namespace ppspec::engine {

namespace {

std::vector<core::RankId> column_of(const Topology& t, int tp_rank) {
  std::vector<core::RankId> m;
  for (int s = 0; s < t.pp; ++s) m.push_back(t.rank_of(s, tp_rank));
  return m;
}

}  // namespace

std::vector<CommunicatorSpec> communicators(const Topology& t) {
  std::vector<CommunicatorSpec> out;
  if (t.tp > 1)
    for (int s = 0; s < t.pp; ++s) {
      std::vector<core::RankId> m;
      for (int r = 0; r < t.tp; ++r) m.push_back(t.rank_of(s, r));
      out.push_back({fmt::format("tp{}", s), CommRole::tensor_parallel, s, m});
    }
  if (t.pp > 1) {
    for (int r = 0; r < t.tp; ++r) out.push_back({fmt::format("pp{}", r), CommRole::pipeline, r, column_of(t, r)});
    // Its own communicator, so that the feedback does not serialise with the activations (R2).
    for (int r = 0; r < t.tp; ++r) out.push_back({fmt::format("pp_broadcast{}", r), CommRole::feedback, r, column_of(t, r)});
  }
  return out;
}

}  // namespace ppspec::engine
