#include "verify/monitors/decision_agreement.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

void DecisionAgreement::on_event(const core::Event& e) {
  if (e.kind == core::EventKind::draft_budget) on_budget(e);
  if (e.kind == core::EventKind::tokens_sampled && facts_.tp > 1) on_sampled(e);
}

void DecisionAgreement::on_budget(const core::Event& e) {
  if (reported(core::FindingKind::decision_disagreement)) return;
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

void DecisionAgreement::on_sampled(const core::Event& e) {
  // A recorded trace may hold anything: a sample of another stage's rank is not this check's.
  if (reported(core::FindingKind::sample_disagreement) || !facts_.last_stage(e.rank)) return;
  const auto probe = core::TokensSampledProbe::decode(e);
  const std::pair<int64_t, int64_t> key{e.step, e.req};
  auto it = samples_.find(key);
  if (it == samples_.end()) {
    samples_.emplace(key, Sample{e.rank, {probe.tokens.begin(), probe.tokens.end()}, probe.num_rejected, 1});
    while (!samples_.empty() && samples_.begin()->first.first < e.step - static_cast<int64_t>(kStepsKept))
      samples_.erase(samples_.begin());
    return;
  }
  Sample& first = it->second;
  // The same rank again (a trace that repeats a probe): compared with nothing but the first rank's.
  if (first.rank == e.rank) return;
  const bool same = first.rejected == probe.num_rejected &&
                    std::equal(first.tokens.begin(), first.tokens.end(), probe.tokens.begin(), probe.tokens.end());
  if (same) {
    if (++first.ranks >= facts_.tp) samples_.erase(it);
    return;
  }
  // "2 of 3 drafts accepted"; a sample with no drafts verified (a prefill's first token) says so.
  const auto kept = [](size_t tokens, int64_t rejected) {
    const auto accepted = static_cast<int64_t>(tokens == 0 ? 0 : tokens - 1);
    if (accepted + rejected == 0) return std::string("no drafts verified");
    return fmt::format("{} of {} drafts accepted", accepted, accepted + rejected);
  };
  core::Finding f = finding_at(
      e, core::Verdict::stage_divergence, core::FindingKind::sample_disagreement,
      fmt::format("request {}'s sample of engine step {} disagrees across the last stage's TP ranks: rank{} kept "
                  "[{}] ({}), rank{} kept [{}] ({})",
                  e.req, e.step, first.rank, fmt::join(first.tokens, " "), kept(first.tokens.size(), first.rejected),
                  e.rank, fmt::join(probe.tokens, " "), kept(probe.tokens.size(), probe.num_rejected)));
  for (const core::RankId r : {first.rank, e.rank})
    f.sites.push_back(core::Site{r, fmt::format("rank{}.host", r), "", -1, "rejection sample (tokens read back)", ""});
  f.details.push_back(
      "every TP rank of the last stage samples from the same logits and keeps its own tokens: nothing made the "
      "ranks one decision, so a sampling stream that is the rank's own (a seed or generator per rank, a sampling "
      "kernel that is not deterministic across ranks) parts them (SGLang #3060: all-reduce the sampled ids "
      "across TP; vLLM #31307: tp rank 0's drafts broadcast)");
  f.details.push_back(fmt::format(
      "each rank feeds its own tokens down its TP column: from the next step on, the columns embed different "
      "tokens for request {}, and the ranks' drafters start from different anchors",
      e.req));
  report(std::move(f));
}

}  // namespace ppspec::verify
