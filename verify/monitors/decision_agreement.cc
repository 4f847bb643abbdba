#include "verify/monitors/decision_agreement.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

void DecisionAgreement::on_event(const core::Event& e) {
  if (reported(core::FindingKind::decision_disagreement) || e.kind != core::EventKind::draft_budget) return;
  const auto probe = core::DraftBudgetProbe::decode(e);
  PPSPEC_ASSERT(facts_.last_stage(e.rank), "rank{} (stage {}) reported a draft budget: only the last stage drafts",
                e.rank, facts_.stage_of(e.rank));
  const auto [it, first] = first_.try_emplace(e.step, Decision{e.rank, probe.budget, probe.confidence});
  while (first_.size() > kStepsKept) first_.erase(first_.begin());
  if (first) return;
  const Decision& d = it->second;
  if (d.budget == probe.budget) return;
  const double one = 65536.0;
  core::Finding f = finding_at(e, core::Verdict::fifo_misalignment, core::FindingKind::decision_disagreement,
                               fmt::format("the draft budget of engine step {} disagrees across the last stage's TP "
                                           "ranks: rank{} drafts {} per request, "
                                           "rank{} drafts {}",
                                           e.step, d.rank, d.budget, e.rank, probe.budget));
  f.sites.push_back(
      core::Site{d.rank, fmt::format("rank{}.host", d.rank), "", -1, "draft budget (prepare_dflash_inputs)", ""});
  f.sites.push_back(
      core::Site{e.rank, fmt::format("rank{}.host", e.rank), "", -1, "draft budget (prepare_dflash_inputs)", ""});
  f.details.push_back(fmt::format(
      "rank{} decided from its own confidence estimate {:.4f}, rank{} from {:.4f}: each rank "
      "picked the budget from its own state, and nothing made them one decision (vLLM #56831: "
      "tp rank 0 decides and broadcasts)",
      d.rank, static_cast<double>(d.confidence) / one, e.rank, static_cast<double>(probe.confidence) / one));
  f.details.push_back(
      "the ranks draft blocks of different sizes: their TP columns verify different drafts next, and the "
      "confidence all-reduce of this step is posted with different counts");
  report(std::move(f));
}

}  // namespace ppspec::verify
