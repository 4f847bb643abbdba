// Attention route: under TRITON_MLA (engine/attention_groups.h) the decode path's causal kernel
// runs one program per query row over one block-table row and one sequence length per request, so
// every request the metadata builder splits onto it must have a query of one row. A request of L > 1
// rows there (a verification block, a prefill chunk) has its rows past the first read the tables of
// the requests after it, or past the tables' end (vLLM #51848). Judged from the split each rank
// built (attention_split), before the kernel runs.
#pragma once

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class AttentionRoute final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  KindSet kinds() const override { return kind_set({core::EventKind::attention_split}); }
};

}  // namespace ppspec::verify
