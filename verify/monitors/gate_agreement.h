// Gate agreement: every rank of the pipeline decides the same way, for each step, whether the step
// has feedback (`need_sampled_mask`), and for which rows. The decision is made independently on
// each rank from the scheduler output; if two ranks disagree, one posts a collective the other does
// not, and the pp_broadcast FIFO misaligns from that step on.
#pragma once

#include <map>
#include <vector>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class GateAgreement final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::gate}); }

 private:
  struct Decision {
    core::RankId rank;
    bool posts_feedback;
    std::vector<int64_t> rows;
  };
  std::map<int64_t, Decision> first_;  // by engine step: the first rank's decision
};

}  // namespace ppspec::verify
