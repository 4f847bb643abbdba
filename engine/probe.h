// Engine probes (DESIGN §7): what the engine tells the checkers as it runs. One helper for every
// publisher, so that an unobserved run builds no events, and every probe is a typed struct
// (core/probes.h) encoded in the trace format's layout.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/assert.h"
#include "core/probes.h"
#include "core/runtime.h"

namespace ppspec::engine {

// Who publishes a probe, and about what.
struct Probe {
  core::RankId rank = -1;
  int64_t step = -1;
  int64_t req = -1;
  std::string_view actor{};
};

template <typename Payload>
void publish(core::Runtime& rt, const Probe& p, const Payload& payload, core::EventKind kind = Payload::kKind) {
  if (!rt.events().active()) return;
  // One encoding buffer per thread, kept between probes so that publishing allocates nothing once
  // it has grown: events are delivered synchronously and no subscriber publishes a probe, so the
  // buffer is free again when rt.publish returns.
  thread_local core::ProbeData data;
  thread_local bool encoding = false;
  PPSPEC_ASSERT(!encoding, "a probe was published while another was being delivered");
  struct Release {  // also when a subscriber throws
    bool& flag;
    ~Release() { flag = false; }
  } release{encoding};
  encoding = true;
  data.value = -1;
  data.ints.clear();
  data.subject = {};
  payload.encode(data);
  core::Event e;
  e.t = rt.now();
  e.kind = kind;
  e.rank = p.rank;
  e.step = p.step;
  e.req = p.req;
  e.value = data.value;
  e.subject = data.subject;
  e.actor = p.actor;
  e.ints = data.ints;
  PPSPEC_ASSERT(core::probe_layout_ok(e), "{}", core::probe_layout_error(e));
  rt.publish(e);
}

// The drafts probes share one struct; their kind is the struct's field.
inline void publish(core::Runtime& rt, const Probe& p, const core::DraftsProbe& payload) {
  publish(rt, p, payload, payload.kind);
}

}  // namespace ppspec::engine
