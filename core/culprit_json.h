// A culprit as JSON, every field as it is (-1 and "" kept): what a result crossing a process and
// the differentials' tables write. Reports for people write their own, with null for unknown.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/blame.h"
#include "core/verdict.h"

namespace ppspec::core {

inline nlohmann::json culprit_json(const Culprit& c) {
  return {{"rank", c.rank}, {"comm", c.comm},         {"p2p", c.p2p},
          {"peer", c.peer}, {"position", c.position}, {"what", std::string(to_string(c.what))}};
}

// Throws std::runtime_error on a blame this build does not know.
inline Culprit culprit_of_json(const nlohmann::json& j) {
  const auto blame = parse_blame(j.at("what").get<std::string>());
  if (!blame) throw std::runtime_error("a culprit blamed for nothing known");
  return Culprit{j.at("rank").get<RankId>(), j.at("comm").get<std::string>(), j.at("p2p").get<bool>(),
                 j.at("peer").get<RankId>(), j.at("position").get<int64_t>(), *blame};
}

}  // namespace ppspec::core
