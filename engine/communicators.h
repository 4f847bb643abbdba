// The engine's communicators: their names, members and what each is for. A checker asks for a
// communicator's role (ServingFacts::comm_roles), never parses its name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "engine/config.h"

namespace ppspec::engine {

// What a communicator of the engine is for: checkers ask this, never its name.
enum class CommRole : uint8_t {
  tensor_parallel,  // the ranks of one stage (index: the stage)
  pipeline,         // one TP column across the stages, for activations (index: the TP rank)
  feedback,         // the same column, for the sampled tokens and drafts: pp_broadcast (index: the TP rank)
};

struct CommunicatorSpec {
  std::string name;
  CommRole role = CommRole::tensor_parallel;
  int index = 0;
  std::vector<core::RankId> members;
};

// The communicators of a topology, in the order every rank initialises them.
std::vector<CommunicatorSpec> communicators(const Topology& t);

}  // namespace ppspec::engine
