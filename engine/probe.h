// Engine probes (DESIGN §7): what the engine tells the checkers as it runs. One helper for every
// publisher, so that an unobserved run builds no events.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/runtime.h"

namespace ppspec::engine {

struct Probe {
  core::EventKind kind;
  core::RankId rank = -1;
  int64_t step = -1;
  int64_t req = -1;
  int64_t value = -1;
  core::ProbeSubject subject{};
  std::string_view actor{};
};

inline void publish(core::Runtime& rt, const Probe& p, const std::vector<int64_t>& ints = {}) {
  if (!rt.events().active()) return;
  core::Event e;
  e.t = rt.now();
  e.kind = p.kind;
  e.rank = p.rank;
  e.step = p.step;
  e.req = p.req;
  e.value = p.value;
  e.subject = p.subject;
  e.actor = p.actor;
  e.ints = ints;
  rt.publish(e);
}

}  // namespace ppspec::engine
