#include "verify/monitors/gate_agreement.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "core/probes.h"

namespace ppspec::verify {

void GateAgreement::on_event(const core::Event& e) {
  if (reported(core::FindingKind::gate_disagreement) || reported(core::FindingKind::gate_rows_disagreement) ||
      e.kind != core::EventKind::gate)
    return;
  const auto gate = core::GateProbe::decode(e);
  const std::vector<int64_t> rows(gate.rows.begin(), gate.rows.end());
  const auto [it, first] = first_.try_emplace(e.step, Decision{e.rank, gate.posts_feedback, rows});
  // Steps more than a few pipelines back are decided on every rank: forget them.
  while (!first_.empty() && first_.begin()->first + 4 * facts_.pp + 4 < e.step) first_.erase(first_.begin());
  PPSPEC_ASSERT(first_.count(e.step) == 1 && first_.begin()->first + 4 * facts_.pp + 4 >= e.step);
  if (first) return;
  const Decision& d = it->second;
  if (d.posts_feedback == gate.posts_feedback && d.rows == rows) return;
  auto words = [](const Decision& x) {
    return !x.posts_feedback ? std::string("no feedback") : fmt::format("feedback for rows {}", token_list(x.rows));
  };
  // Both posting: the collectives' shapes follow the batch, not the mask, so they pair; only which
  // rows adopt the sample differs, and with it the ranks' tables for those rows' requests.
  const bool rows_only = d.posts_feedback && gate.posts_feedback;
  core::Finding f =
      finding_at(e, rows_only ? core::Verdict::stage_divergence : core::Verdict::fifo_misalignment,
                 rows_only ? core::FindingKind::gate_rows_disagreement : core::FindingKind::gate_disagreement,
                 fmt::format("the feedback gate of engine step {} disagrees: rank{} decided {}, rank{} {}", e.step,
                             d.rank, words(d), e.rank, words(Decision{e.rank, gate.posts_feedback, rows})));
  f.sites.push_back(core::Site{d.rank, fmt::format("rank{}.host", d.rank), "", -1, "need_sampled_mask", ""});
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.host", e.rank), "", -1, "need_sampled_mask", ""});
  if (rows_only)
    f.details.push_back(
        "both ranks post the step's feedback collectives, whose shapes follow the batch, not the mask: the "
        "pp_broadcast FIFO stays aligned; a row whose sample one rank adopts and the other does not leaves the "
        "two ranks' tables for that row's request apart from here");
  else
    f.details.push_back(
        "one rank posts a feedback collective the other does not: the pp_broadcast FIFO misaligns here");
  report(std::move(f));
}

}  // namespace ppspec::verify
