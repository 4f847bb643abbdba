// The golden drafter (`output-divergence`, kind `drafter-oracle`): the drafts the last stage
// proposes for a request at an engine step equal those of a plain-loop reference drafter over the
// request's context at that step (its prompt and every token sampled for it so far), checked as
// each proposal is published, so a drafter that proposes worse drafts is caught at its first
// step, not by an acceptance figure after the run. PP and padding invariance compare the drafter
// with itself; this compares it with its definition (DESIGN §6.4):
//   h = sum over the context but its last token t_q of E_ctx[t_q] * R^q   (the anchor's context lane)
//   then K times: h += E_draft[tok] * R^pos; tok = ctx_token(h); pos += 1  (from the bonus token).
#pragma once

#include <map>
#include <vector>

#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

// The reference: the drafts for a context whose last token is the bonus.
std::vector<int64_t> reference_drafts(const engine::Checkpoint& ckpt, int vocab, int k, const std::vector<int64_t>& context);

class DrafterReference final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;

 private:
  struct Request {
    std::vector<int64_t> context;  // prompt, then every sampled token
    int64_t last_sampled_step = -1;
    int64_t started_step = -1;  // its admission, or its resumption after a preemption
  };
  void check(const core::Event& e, const core::DraftsProbe& p);
  std::map<int64_t, Request> requests_;  // by id; a finished request's entry stays (ids are not reused)
};

}  // namespace ppspec::verify
