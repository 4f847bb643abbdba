// A monitor fed hand-made events (tests/probe_events.h), keeping what it reports: the fixture of
// the monitor tests.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "engine/communicators.h"
#include "tests/probe_events.h"
#include "verify/monitors/monitor.h"

namespace ppspec::testing {

// Feeds hand-made events to one monitor and keeps what it reports.
template <typename M>
struct Fixture {
  verify::ServingFacts facts;
  std::vector<core::Finding> found;
  ProbeEvents events;  // the events' integer lists live as long as the fixture
  std::unique_ptr<M> monitor;
  uint64_t next_seq = 0;

  Fixture() {
    facts.pp = 2;
    facts.tp = 2;
    facts.k = 3;
    facts.topk = 2;
    facts.draft_table_hash = 1234;
    facts.draft_table_entries = 512;
    engine::Topology topology;
    topology.pp = facts.pp;
    topology.tp = facts.tp;
    for (const engine::CommunicatorSpec& c : engine::communicators(topology)) facts.comm_roles.emplace(c.name, c.role);
    monitor = std::make_unique<M>(facts, [this](core::Finding f) { found.push_back(std::move(f)); });
  }
  void send(core::EventKind kind, core::RankId rank, int64_t step, int64_t req, std::vector<int64_t> ints,
            int64_t value = -1, core::ProbeSubject subject = {}, std::string_view comm = {}) {
    core::Event e = events.make(kind, rank, step, req, std::move(ints), value, subject, comm);
    e.seq = next_seq++;            // as the bus numbers them
    verify::deliver(*monitor, e);  // as a serving run delivers it
  }
  void phase(core::RankId rank, core::WarmupPhase phase) {
    send(core::EventKind::warmup_phase, rank, -1, -1, {}, -1, {.phase = phase});
  }
};

}  // namespace ppspec::testing
