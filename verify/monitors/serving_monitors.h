// Every invariant monitor of a serving run, behind one event sink: warmup discipline, gate and
// stage agreement, draft freshness, the drafter and model references, padding, embedding, KV
// ownership, leaks, scheduling cadence, pipeline bubbles. Findings arrive in event order; the caller decides
// what a finding does to the run (a simulated run stops at the first failure; hazards are noted).
#pragma once

#include <memory>
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
  std::vector<std::unique_ptr<Monitor>> monitors_;
  const class ModelReference* model_reference_ = nullptr;
};

}  // namespace ppspec::verify
