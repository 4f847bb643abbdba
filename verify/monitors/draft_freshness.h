// Draft freshness: the drafts a rank puts into a request's verification rows at engine step T are
// the drafts the last stage proposed for that request at its previous step. Under PP, earlier stages
// hold them only if the last stage relayed them (PPHandler.broadcast_drafts); otherwise they verify
// whatever their own table still holds — stale drafts (the bug #52295 / #56956 fixed).
// Checked from the rank's "serving" phase on (warmup steps carry synthetic drafts). Also: the drafts an
// earlier stage adopts from step T's feedback are exactly those the last stage proposed at step T.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class DraftFreshness final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::warmup_phase, core::EventKind::drafts_proposed, core::EventKind::drafts_adopted,
                     core::EventKind::inputs_built});
  }

 private:
  void check_embedded(const core::Event& e, const core::InputsBuiltProbe& row);
  void check_adoption(const core::Event& e, const core::DraftsProbe& drafts);
  static constexpr size_t kProposalsKept = 4;  // per request: only the latest ones can still be verified
  struct Proposal {
    int64_t step;
    core::RankId rank;
    std::vector<int64_t> drafts;
  };
  std::string freshness_hint(int64_t req, const std::vector<int64_t>& embedded, const Proposal& latest,
                             int stage) const;
  std::map<int64_t, std::vector<Proposal>> proposals_;  // by request id, in step order
  std::map<core::RankId, bool> serving_;
};

}  // namespace ppspec::verify
