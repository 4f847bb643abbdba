// Invariant monitors over the event stream (DESIGN §7). Each one subscribes to the events the engine
// and the runtime publish, so the same monitor runs online (in a simulated run, where its first
// finding stops the run at the first wrong step) and offline (over a recorded trace).
#pragma once

#include <bitset>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/assert.h"
#include "core/event.h"
#include "core/verdict.h"
#include "engine/communicators.h"
#include "engine/disaggregation.h"

namespace ppspec::engine {
struct Checkpoint;
struct ModelConfig;
}  // namespace ppspec::engine

namespace ppspec::verify {

// What the monitors know about the system under test, beyond its events.
struct ServingFacts {
  // Data-parallel replicas: ServingMonitors runs one set of monitors per replica, each fed its
  // replica's events with the ranks numbered within the replica (0 .. pp * tp - 1), so that every
  // monitor sees one pp x tp engine.
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int k = 0;
  int topk = 2;                   // experts each drafter row selects
  int block_size = 16;            // KV slots per block
  int64_t draft_table_hash = -1;  // core::fnv1a_words of the checkpoint's drafter embedding
  int64_t draft_table_entries = 0;
  int vocab = 0;
  // The checkpoint and the model, for the reference drafter and model (verify/monitors/drafter_reference.h,
  // verify/monitors/model_reference.h); null: no reference.
  std::shared_ptr<const engine::Checkpoint> checkpoint;
  std::shared_ptr<const engine::ModelConfig> model;
  // The EAGLE drafter's tapped layers (engine::eagle_taps); empty: the DSpark drafter.
  std::vector<int> eagle_taps;
  // The workload's requests sampled with temperature; the others and warmup's are greedy.
  std::set<int64_t> temperature_requests;
  // What each of the engine's communicators is for, by name (engine::communicators).
  std::map<std::string, engine::CommRole, std::less<>> comm_roles;
  bool has_role(std::string_view comm, engine::CommRole role) const {
    const auto it = comm_roles.find(comm);
    return it != comm_roles.end() && it->second == role;
  }
  // Disaggregation (engine/disaggregation.h): the KV transfer's routes (empty: not disaggregated),
  // and the prefill instance's own facts, for its monitors (ranks numbered within it).
  std::vector<engine::KvRoute> kv_routes;
  std::shared_ptr<const ServingFacts> prefill_instance;
  int prefill_first_rank = 0;
  int stage_of(core::RankId r) const { return r / tp; }
  core::RankId first_rank_of(int stage) const { return stage * tp; }
  bool last_stage(core::RankId r) const { return stage_of(r) == pp - 1; }
};

class Monitor : public core::EventSink {
 public:
  using Sink = std::function<void(core::Finding)>;
  Monitor(const ServingFacts& facts, Sink sink) : facts_(facts), sink_(std::move(sink)) {
    PPSPEC_ASSERT(facts_.pp >= 1 && facts_.tp >= 1, "a monitor of pp={} tp={}", facts_.pp, facts_.tp);
  }

  // The event kinds this monitor's on_event can act on: ServingMonitors delivers only those (a
  // serving run publishes an event per kernel, and most monitors ignore most kinds). A monitor
  // that names none sees every event.
  using KindSet = std::bitset<core::kEventKinds>;
  virtual KindSet kinds() const { return KindSet().set(); }
  static KindSet kind_set(std::initializer_list<core::EventKind> kinds) {
    KindSet s;
    for (core::EventKind k : kinds) s.set(static_cast<size_t>(k));
    return s;
  }

  // What this monitor skipped (skip()), by phrase (static strings), in a deterministic order.
  const std::map<std::string_view, uint64_t>& skipped() const { return skipped_; }

 protected:
  // Reports a violation. A monitor reports the first violation of each kind only: later ones are
  // usually its consequences, and the first is the one to act on.
  void report(core::Finding f) {
    PPSPEC_ASSERT(f.kind != core::FindingKind::none && !f.summary.empty(),
                  "a finding without its kind or summary (kind '{}')", f.kind);
    if (!reported_.insert(f.kind).second) return;
    sink_(std::move(f));
  }
  // Asked on every event by some monitors: a lookup in a set that is empty until the first report.
  bool reported(core::FindingKind kind) const { return reported_.count(kind) > 0; }
  // An event this monitor acts on that lacked what it needs to be judged (a decode row whose
  // request has no proposal on record, ...): counted under `what`, a phrase with the monitor's
  // name, so that a run that found nothing says what was left unchecked instead of a bare pass.
  void skip(std::string_view what) {
    PPSPEC_ASSERT(!what.empty());
    ++skipped_[what];
  }

  const ServingFacts facts_;

 private:
  Sink sink_;
  std::set<core::FindingKind> reported_;
  std::map<std::string_view, uint64_t> skipped_;
};

// Delivers `e` to `m` as ServingMonitors does: only when `m` acts on its kind. (ServingMonitors
// looks the kinds up once, in its own table; the monitor tests feed their events through this.)
inline void deliver(Monitor& m, const core::Event& e) {
  if (m.kinds().test(static_cast<size_t>(e.kind))) m.on_event(e);
}

// A finding stamped with the event that shows it: its time, engine step and rank.
core::Finding finding_at(const core::Event& e, core::Verdict v, core::FindingKind kind, std::string summary);

// "[1, 2, 3]"
std::string token_list(std::span<const int64_t> v);

}  // namespace ppspec::verify
