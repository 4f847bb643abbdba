// Embedding: the table the drafter embeds with equals the checkpoint's drafter embedding. Under
// pp > 1 the target's table lives on stage 0 only, so a drafter on the last stage that aliases it
// reads memory its own stage never loaded (the bug `loads_own_embed_under_pp` fixed).
#pragma once

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class EmbeddingChecker final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::table_bound}); }
};

}  // namespace ppspec::verify
