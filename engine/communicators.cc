#include "engine/communicators.h"

#include <fmt/format.h>

namespace ppspec::engine {

namespace {

std::vector<core::RankId> column_of(const Topology& t, int tp_rank, int replica) {
  std::vector<core::RankId> m;
  for (int s = 0; s < t.pp; ++s) m.push_back(t.rank_of(s, tp_rank, replica));
  return m;
}

// One replica's communicators, as a dp = 1 engine has them.
void append_replica(const Topology& t, int replica, std::string_view instance_prefix,
                    std::vector<CommunicatorSpec>& out) {
  const std::string prefix = replica == 0 ? std::string(instance_prefix) : fmt::format("dp{}.", replica);
  if (t.tp > 1)
    for (int s = 0; s < t.pp; ++s) {
      std::vector<core::RankId> m;
      for (int r = 0; r < t.tp; ++r) m.push_back(t.rank_of(s, r, replica));
      out.push_back({fmt::format("{}tp{}", prefix, s), CommRole::tensor_parallel, s, m});
    }
  if (t.pp > 1) {
    for (int r = 0; r < t.tp; ++r)
      out.push_back({fmt::format("{}pp{}", prefix, r), CommRole::pipeline, r, column_of(t, r, replica)});
    // Its own communicator, so that the feedback does not serialise with the activations (R2).
    for (int r = 0; r < t.tp; ++r)
      out.push_back({fmt::format("{}pp_broadcast{}", prefix, r), CommRole::feedback, r, column_of(t, r, replica)});
  }
}

}  // namespace

std::vector<CommunicatorSpec> communicators(const Topology& t, Instance instance) {
  std::vector<CommunicatorSpec> out;
  const std::string_view prefix = instance == Instance::prefill ? "prefill." : "";
  for (int replica = 0; replica < t.dp; ++replica) append_replica(t, replica, prefix, out);
  if (t.dp > 1)
    for (int s = 0; s < t.pp; ++s)
      for (int r = 0; r < t.tp; ++r) {
        std::vector<core::RankId> m;
        for (int replica = 0; replica < t.dp; ++replica) m.push_back(t.rank_of(s, r, replica));
        out.push_back({fmt::format("dp_group.stage{}.tp{}", s, r), CommRole::data_parallel, s * t.tp + r, m});
      }
  return out;
}

std::string replica_engine_actor(int replica, Instance instance) {
  if (instance == Instance::prefill) return std::string(kPrefillEngineActor);
  return replica == 0 ? "engine" : fmt::format("dp{}.engine", replica);
}

int replica_of_engine_actor(std::string_view actor, int dp) {
  for (int r = 0; r < dp; ++r)
    if (actor == replica_engine_actor(r)) return r;
  return -1;
}

int index_in_role(const Topology& t, CommRole role, core::RankId rank) {
  switch (role) {
    case CommRole::tensor_parallel: return t.stage_of(rank);
    case CommRole::pipeline:
    case CommRole::feedback: return t.tp_rank_of(rank);
    case CommRole::data_parallel: return t.stage_of(rank) * t.tp + t.tp_rank_of(rank);
  }
  return -1;
}

}  // namespace ppspec::engine
