// Padding: the rows a CUDA graph reads past the real batch (R10) must be inert — input id 0,
// position 0, is_padding set, slot PAD (-1), and written by this step's prepare kernel rather than
// left from an earlier batch or never written at all (shadow bytes); the drafter's top-k router
// must select no expert for them (id -1, weight 0). Checked on every `padding_rows` probe.
#pragma once

#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class PaddingChecker final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::padding_rows}); }

 private:
  void check_inputs(const core::Event& e, const core::PaddingRowsProbe& padding);
  void check_router(const core::Event& e, const core::PaddingRowsProbe& padding);
};

}  // namespace ppspec::verify
