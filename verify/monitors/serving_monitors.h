// Every invariant monitor of a serving run, behind one event sink: warmup discipline, gate and
// stage agreement, draft freshness, the drafter and model references, padding, embedding, KV
// ownership, leaks, scheduling cadence, pipeline bubbles. Findings arrive in event order; the caller decides
// what a finding does to the run (a simulated run stops at the first failure; hazards are noted).
// With dp > 1 each replica has its own monitors, fed its own events (ranks numbered within it,
// engine probes by the replica's engine actor); the events of no replica reach every replica's.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/config.h"
#include "verify/monitors/monitor.h"
#include "verify/oracles/serving_oracles.h"

namespace ppspec::verify {

ServingFacts serving_facts(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt);

class ServingMonitors final : public core::EventSink {
 public:
  ServingMonitors(const ServingFacts& facts, Monitor::Sink sink);
  ~ServingMonitors() override;
  void on_event(const core::Event& e) override;
  OnlineCoverage coverage() const;

 private:
  struct Replica {
    std::vector<std::unique_ptr<Monitor>> monitors;
    // Per event kind, the monitors that act on it, in the order of `monitors`.
    std::array<std::vector<Monitor*>, core::kEventKinds> by_kind;
    const class ModelReference* model_reference = nullptr;
    std::string engine_actor;
  };
  static Replica make_replica(const ServingFacts& facts, Monitor::Sink sink);
  // The replica an event belongs to; -1: none (every replica's monitors see it).
  int replica_of(const core::Event& e) const;
  void deliver(Replica& r, const core::Event& e);

  int replica_ranks_ = 1;
  std::vector<Replica> replicas_;
  // Disaggregation: the prefill instance's monitors (its ranks from prefill_first_rank_ on, its
  // engine core's probes), and the KV transfer's, which sees both instances' events.
  std::unique_ptr<Replica> prefill_;
  int prefill_first_rank_ = 0;
  std::unique_ptr<class KvTransferMonitor> kv_transfer_;
};

}  // namespace ppspec::verify
