// Warmup discipline (DESIGN §6.3): a rank disables the feedback broadcast before warmup begins and
// posts no feedback collective until the feedback warmup step re-enables it; and once a rank is
// serving, it loads no kernel module — a load then waits for the device to drain while feedback
// receives spin on the side stream (R8). Violations are hazards: they hang only on some schedules.
#pragma once

#include <map>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class WarmupDiscipline final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::warmup_phase, core::EventKind::op_posted, core::EventKind::module_load});
  }

 private:
  enum class Phase : uint8_t { init, disabled, warmup, feedback_warmup, serving };
  std::map<core::RankId, Phase> phase_;
};

}  // namespace ppspec::verify
