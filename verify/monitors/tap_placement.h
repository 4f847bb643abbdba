// EAGLE tap placement (`output-divergence`, kind `tap-placement`): the stage that holds a tapped
// target layer digests that layer's output into that layer's tap, once per forward, and no stage
// fills a tap from another layer. Judged from what each rank's forward digested (`eagle_taps`
// probes: per tap filled, the layer whose output went in) against the target's layer split, where
// the drafter reference would see the wrong tap only at the first draft its digest steers, and
// blame the taps' transport or the drafter for it (vLLM #36151).
#pragma once

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class TapPlacement final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::eagle_taps}); }
};

}  // namespace ppspec::verify
