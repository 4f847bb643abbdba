// The golden drafter (`output-divergence`, kind `drafter-oracle`): the drafts the last stage
// proposes for a request at an engine step equal those of a plain-loop reference drafter over the
// request's context at that step (its prompt and every token sampled for it so far), checked as
// each proposal is published, so a drafter that proposes worse drafts is caught at its first
// step, not by an acceptance figure after the run. PP and padding invariance compare the drafter
// with itself; this compares it with its definition (DESIGN §6.4):
//   h = sum over the context but its last token t_q of E_ctx[t_q] * R^q   (the anchor's context lane)
//   then K times: h += E_draft[tok] * R^pos; tok = ctx_token(h); pos += 1  (from the bonus token).
// The EAGLE drafter's reference (kernels/eagle.h) takes its taps from the reference model
// (ReferenceSequence) at the anchor position, the context's second to last: a tap cross-
// matched with another transfer, or taken from another layer or row, is seen in its drafts.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "verify/oracles/golden.h"

#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

// The reference: the drafts for a context whose last token is the bonus.
std::vector<int64_t> reference_drafts(const engine::Checkpoint& ckpt, int vocab, int k,
                                      const std::vector<int64_t>& context);

// The EAGLE reference: the drafts for the context `seq` holds (its last token the bonus).
std::vector<int64_t> reference_eagle_drafts(const engine::Checkpoint& ckpt, int vocab, const std::vector<int>& taps,
                                            int k, ReferenceSequence& seq);

class DrafterReference final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set(
        {core::EventKind::request_scheduled, core::EventKind::tokens_sampled, core::EventKind::drafts_proposed});
  }
  // Proposals compared with the reference.
  uint64_t proposals_checked() const { return proposals_checked_; }

 private:
  struct Request {
    std::vector<int64_t> context;  // prompt, then every sampled token
    int64_t last_sampled_step = -1;
    int64_t started_step = -1;                 // its admission, or its resumption after a preemption
    std::unique_ptr<ReferenceSequence> model;  // EAGLE: the reference model over `context`
  };
  std::vector<int64_t> expected(Request& r, int k);
  void check(const core::Event& e, const core::DraftsProbe& p);
  std::map<int64_t, Request> requests_;
  uint64_t proposals_checked_ = 0;  // by id; a finished request's entry stays (ids are not reused)
};

}  // namespace ppspec::verify
