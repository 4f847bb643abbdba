#include "verify/monitors/draft_freshness.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/assert.h"

namespace ppspec::verify {

void DraftFreshness::on_event(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::warmup_phase:
      if (e.subject.phase == core::WarmupPhase::serving) serving_[e.rank] = true;
      return;
    case core::EventKind::drafts_proposed: {
      auto& list = proposals_[e.req];
      // Every TP rank of the last stage proposes the same drafts: keep one per step.
      if (!list.empty() && list.back().step == e.step) return;
      const auto proposed = core::DraftsProbe::decode(e).drafts;
      list.push_back(Proposal{e.step, e.rank, {proposed.begin(), proposed.end()}});
      if (list.size() > kProposalsKept) list.erase(list.begin());
      PPSPEC_ASSERT(!list.empty() && list.size() <= kProposalsKept && list.back().step == e.step);
      return;
    }
    case core::EventKind::drafts_adopted: check_adoption(e, core::DraftsProbe::decode(e)); return;
    case core::EventKind::inputs_built: check_embedded(e, core::InputsBuiltProbe::decode(e)); return;
    default: return;
  }
}

void DraftFreshness::check_embedded(const core::Event& e, const core::InputsBuiltProbe& row) {
  // A decode block's ids: the last sampled token, then the drafts.
  if (!row.decode_row || row.input_ids.size() < 2 || !serving_[e.rank]) return;
  const auto it = proposals_.find(e.req);
  if (it == proposals_.end()) return skip("draft freshness: decode rows whose request has no proposal on record");
  const Proposal* latest = nullptr;
  for (const Proposal& p : it->second)
    if (p.step < e.step) latest = &p;
  if (latest == nullptr) return skip("draft freshness: decode rows with no proposal of an earlier step on record");
  const std::vector<int64_t> embedded(row.input_ids.begin() + 1, row.input_ids.end());
  const size_t n = std::min(embedded.size(), latest->drafts.size());
  PPSPEC_ASSERT(latest->step < e.step && it->second.size() <= kProposalsKept);
  if (std::equal(embedded.begin(), embedded.begin() + static_cast<std::ptrdiff_t>(n), latest->drafts.begin())) return;
  const int stage = facts_.stage_of(e.rank);
  const std::vector<int64_t> proposed(latest->drafts.begin(), latest->drafts.begin() + static_cast<std::ptrdiff_t>(n));
  core::Finding f = finding_at(
      e, core::Verdict::stale_draft, core::FindingKind::draft_freshness,
      fmt::format(
          "rank{} (stage {}) verifies request {} at engine step {} with drafts {}, but the last stage proposed {} "
          "for it at engine step {}",
          e.rank, stage, e.req, e.step, token_list(embedded), token_list(proposed), latest->step));
  f.sites.push_back(
      core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                 fmt::format("prepare_inputs: request {} decode row at position {}", e.req, row.first_position), ""});
  f.sites.push_back(core::Site{latest->rank, fmt::format("rank{}.main", latest->rank), "", -1,
                               fmt::format("propose: request {} at engine step {}", e.req, latest->step), ""});
  f.details.push_back(fmt::format("request {}, engine step {}: rank{} (stage {}) embeds   {}", e.req, e.step, e.rank,
                                  stage, token_list(embedded)));
  f.details.push_back(fmt::format("request {}, engine step {}: rank{} (stage {}) proposed {}", e.req, latest->step,
                                  latest->rank, facts_.stage_of(latest->rank), token_list(proposed)));
  f.details.push_back(freshness_hint(e.req, embedded, *latest, stage));
  report(std::move(f));
}

std::string DraftFreshness::freshness_hint(int64_t req, const std::vector<int64_t>& embedded, const Proposal& latest,
                                           int stage) const {
  // What the embedded drafts equal says how they got there.
  const auto prefix_equal = [&embedded](const std::vector<int64_t>& d) {
    return d.size() >= embedded.size() && std::equal(embedded.begin(), embedded.end(), d.begin());
  };
  const std::string relay =
      stage != facts_.pp - 1 ? " (the last stage relays them after propose(), PPHandler.broadcast_drafts)" : "";
  if (std::all_of(embedded.begin(), embedded.end(), [](int64_t d) { return d == 0; }))
    return fmt::format(
        "they are the zeros the table row holds from the request's admission: no drafts for this request "
        "ever reached this stage's table{}",
        relay);
  for (const Proposal& p : proposals_.at(req))
    if (p.step < latest.step && prefix_equal(p.drafts))
      return fmt::format(
          "they are the drafts proposed at engine step {}, an older step: the drafts of engine step {} never "
          "reached this stage's table{}",
          p.step, latest.step, relay);
  for (const auto& [other, list] : proposals_)
    if (other != req && !list.empty() && list.back().step == latest.step && prefix_equal(list.back().drafts))
      return fmt::format(
          "they are request {}'s drafts of the same step: the table row of another request was read or "
          "written (idx_mapping)",
          other);
  return "they match no proposal of this request: the table row was overwritten, or the drafts arrived mispaired";
}

void DraftFreshness::check_adoption(const core::Event& e, const core::DraftsProbe& drafts) {
  // The deferred update of step T adopts the drafts the last stage proposed at step T (e.step).
  const auto it = proposals_.find(e.req);
  if (it == proposals_.end()) return skip("draft freshness: adoptions whose request has no proposal on record");
  const Proposal* p = nullptr;
  for (const Proposal& q : it->second)
    if (q.step == e.step) p = &q;
  if (p == nullptr) return skip("draft freshness: adoptions with no proposal of their step on record");
  // The row holds K drafts; an adaptive budget proposed the first 1..K of them (the rest are the
  // MASK id, which no step verifies).
  const std::vector<int64_t> adopted(drafts.drafts.begin(), drafts.drafts.end());
  if (adopted.size() >= p->drafts.size() && std::equal(p->drafts.begin(), p->drafts.end(), adopted.begin())) return;
  core::Finding f = finding_at(
      e, core::Verdict::stale_draft, core::FindingKind::draft_relay,
      fmt::format("rank{} (stage {}) adopts drafts {} for request {} from the feedback of engine step {}, but the last "
                  "stage proposed {}",
                  e.rank, facts_.stage_of(e.rank), token_list(adopted), e.req, e.step, token_list(p->drafts)));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("post_update[deferred]: request {}", e.req), ""});
  f.sites.push_back(core::Site{p->rank, fmt::format("rank{}.side", p->rank), "", -1,
                               fmt::format("broadcast_drafts: engine step {}", e.step), ""});
  f.details.push_back(
      "the relayed drafts arrived changed: a feedback message paired with the wrong operation "
      "(same size, another step or another tensor) or its buffer was overwritten before it was sent");
  report(std::move(f));
}

}  // namespace ppspec::verify
