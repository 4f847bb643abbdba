#include "verify/monitors/scheduling_cadence.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

void SchedulingCadence::on_event(const core::Event& e) {
  if (e.kind != core::EventKind::request_scheduled || e.req == -1) return;
  const auto p = core::RequestScheduledProbe::decode(e);
  if (!p.prompt.empty()) last_step_.erase(e.req);  // admitted or resumed: a prefill needs no feedback
  const bool decode = p.num_computed >= p.prefill_len;
  const auto it = last_step_.find(e.req);
  if (decode && it != last_step_.end() && e.step - it->second < facts_.pp) {
    core::Finding f =
        finding_at(e, core::Verdict::stage_divergence, core::FindingKind::scheduling_cadence,
                   fmt::format("the engine core scheduled request {} at step {}, {} step{} after its step {}: the "
                               "feedback of step {} reaches the earlier stages only at step {} (pp = {})",
                               e.req, e.step, e.step - it->second, e.step - it->second == 1 ? "" : "s", it->second,
                               it->second, it->second + facts_.pp, facts_.pp));
    f.details.push_back(
        "until then the earlier stages' tables hold the request's previous last token and drafts: they would "
        "embed stale inputs (a request in a batch in flight, or one whose feedback is pending, must wait)");
    f.sites.push_back(
        core::Site{0, "rank0.main", "", -1, fmt::format("request {} at engine step {}", e.req, e.step), ""});
    f.sites.push_back(core::Site{-1, "engine", "", -1, "the engine core's scheduler", ""});
    report(std::move(f));
  }
  // Only a step that samples has feedback to wait for (a non-final prefill chunk flows on).
  if (p.num_computed + p.num_scheduled < p.prefill_len) return;
  last_step_[e.req] = e.step;
  if (last_step_.size() > kRequestsKept) {
    auto oldest = last_step_.begin();
    for (auto i = last_step_.begin(); i != last_step_.end(); ++i)
      if (i->second < oldest->second) oldest = i;
    last_step_.erase(oldest);
  }
}

}  // namespace ppspec::verify
