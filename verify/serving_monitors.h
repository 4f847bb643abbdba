// Every invariant monitor of a serving run, behind one event sink: draft freshness, padding,
// embedding, gate agreement, warmup discipline. Findings arrive in event order; the caller decides
// what a finding does to the run (a simulated run stops at the first failure; hazards are noted).
#pragma once

#include <memory>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/config.h"
#include "verify/monitor.h"

namespace ppspec::verify {

ServingFacts serving_facts(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt);

class ServingMonitors final : public core::EventSink {
 public:
  ServingMonitors(const ServingFacts& facts, Monitor::Sink sink);
  ~ServingMonitors() override;
  void on_event(const core::Event& e) override;

 private:
  std::vector<std::unique_ptr<Monitor>> monitors_;
};

}  // namespace ppspec::verify
