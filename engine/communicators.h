// The engine's communicators: their names, members and what each is for. A checker asks for a
// communicator's role (ServingFacts::comm_roles), never parses its name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "engine/config.h"

namespace ppspec::engine {

// What a communicator of the engine is for: checkers ask this, never its name.
enum class CommRole : uint8_t {
  tensor_parallel,  // the ranks of one stage (index: the stage)
  pipeline,         // one TP column across the stages, for activations (index: the TP rank)
  feedback,         // the same column, for the sampled tokens and drafts: pp_broadcast (index: the TP rank)
  data_parallel,    // dp > 1: one stage and TP shard across the replicas, for the per-forward token
                    // counts and the drafter's expert-parallel MoE (index: stage * tp + TP rank)
};

struct CommunicatorSpec {
  std::string name;
  CommRole role = CommRole::tensor_parallel;
  int index = 0;
  std::vector<core::RankId> members;
};

// The communicators of a topology, in the order every rank initialises them. Replica 0's carry the
// names of a dp = 1 engine ("tp0", "pp0", "pp_broadcast0"); replica r's the prefix "dp{r}.". A
// disaggregated prefill instance's carry the prefix "prefill.".
std::vector<CommunicatorSpec> communicators(const Topology& t, Instance instance = Instance::aggregated);
// The name replica r's engine probes carry as their actor, and the channel its outputs return on:
// "engine" for replica 0 (a dp = 1 engine's), "dp{r}.engine" for the others; "prefill.engine" for
// a disaggregated prefill instance.
std::string replica_engine_actor(int replica, Instance instance = Instance::aggregated);
// The prefill instance's engine actor (replica_engine_actor(0, Instance::prefill)).
inline constexpr std::string_view kPrefillEngineActor = "prefill.engine";
// The replica whose engine actor `actor` is, among `dp`; -1: none.
int replica_of_engine_actor(std::string_view actor, int dp);

// The index a communicator of `role` that holds `rank` has.
int index_in_role(const Topology& t, CommRole role, core::RankId rank);

}  // namespace ppspec::engine
