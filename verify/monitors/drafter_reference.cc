#include "verify/monitors/drafter_reference.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

#include "core/finding_kinds.h"
#include "engine/checkpoint.h"
#include "kernels/eagle.h"
#include "kernels/row.h"
#include "kernels/toy_model.h"

namespace ppspec::verify {

std::vector<int64_t> reference_drafts(const engine::Checkpoint& ckpt, int vocab, int k,
                                      const std::vector<int64_t>& context) {
  std::vector<int64_t> drafts;
  if (context.empty()) return drafts;
  const uint32_t r = ckpt.consts.r;
  uint32_t h = 0;
  for (size_t q = 0; q + 1 < context.size(); ++q)
    h += ckpt.embed_ctx.at(static_cast<size_t>(context[q])) * kernels::pow32(r, q);
  int64_t tok = context.back();
  uint64_t pos = context.size() - 1;
  for (int off = 0; off < k; ++off, ++pos) {
    h += ckpt.draft_embed.at(static_cast<size_t>(tok)) * kernels::pow32(r, pos);
    tok = kernels::ctx_token(h, vocab);
    drafts.push_back(tok);
  }
  PPSPEC_ASSERT(static_cast<int64_t>(drafts.size()) == std::max(k, 0), "{} drafts for k={}", drafts.size(), k);
  return drafts;
}

std::vector<int64_t> reference_eagle_drafts(const engine::Checkpoint& ckpt, int vocab, const std::vector<int>& taps,
                                            int k, ReferenceSequence& seq) {
  PPSPEC_ASSERT(seq.size() >= 2 && !taps.empty() && taps.size() <= static_cast<size_t>(kernels::kMaxEagleTaps),
                "an EAGLE reference over {} tokens and {} taps", seq.size(), taps.size());
  const size_t anchor = seq.size() - 2;
  const size_t lanes = ckpt.head.size();
  uint32_t words[kernels::kMaxEagleTaps][kernels::kTapWords] = {};
  for (size_t t = 0; t < taps.size(); ++t) {
    const auto x = seq.lanes(anchor, taps[t] + 1);  // the tapped layer's output
    uint32_t digest = 0;
    for (size_t j = 0; j < lanes; ++j) digest += x[j] * ckpt.tap_weights.at(static_cast<size_t>(taps[t]) * lanes + j);
    words[t][0] = seq.context(anchor);
    words[t][1] = digest;
  }
  kernels::EagleState s = kernels::eagle_fuse(static_cast<int32_t>(taps.size()), words);
  const kernels::Span<const uint32_t> table(ckpt.draft_embed.data(), static_cast<int64_t>(ckpt.draft_embed.size()));
  int64_t tok = seq.token(seq.size() - 1);
  std::vector<int64_t> drafts;
  for (int off = 0; off < k; ++off) {
    tok = kernels::eagle_step(s, tok, static_cast<int64_t>(seq.size() - 1) + off, table, ckpt.consts.r, vocab);
    drafts.push_back(tok);
  }
  return drafts;
}

std::vector<int64_t> DrafterReference::expected(Request& r, int k) {
  if (facts_.eagle_taps.empty()) return reference_drafts(*facts_.checkpoint, facts_.vocab, k, r.context);
  PPSPEC_ASSERT(facts_.model != nullptr, "an EAGLE reference without the model");
  if (!r.model) r.model = std::make_unique<ReferenceSequence>(*facts_.checkpoint, *facts_.model);
  // The context only grows but at a resumption (reassigned): set() recomputes from what changed.
  r.model->truncate(r.context.size());
  for (size_t p = 0; p < r.context.size(); ++p) r.model->set(p, static_cast<int32_t>(r.context[p]));
  return reference_eagle_drafts(*facts_.checkpoint, facts_.vocab, facts_.eagle_taps, k, *r.model);
}

void DrafterReference::on_event(const core::Event& e) {
  if (!facts_.checkpoint || e.req < 0 || facts_.k == 0) return;
  switch (e.kind) {
    case core::EventKind::request_scheduled: {
      // The first schedule of a request carries its prompt; a resumed one's, its prompt and its
      // output so far (a step of it still in flight when it was preempted samples for nothing),
      // from the start even when its prefill starts after a prefix-cache hit.
      const auto p = core::RequestScheduledProbe::decode(e);
      if (!p.prompt.empty()) {
        Request& r = requests_[e.req];
        r.context.assign(p.prompt.begin(), p.prompt.end());
        r.started_step = e.step;
        r.last_sampled_step = -1;  // a step from before the resumption proposes for a context now gone
      }
      return;
    }
    case core::EventKind::tokens_sampled: {
      const auto it = requests_.find(e.req);
      // Every last-stage TP rank samples alike; a step from before a resumption samples for nothing.
      if (it == requests_.end() || it->second.last_sampled_step == e.step || e.step < it->second.started_step) return;
      const auto sampled = core::TokensSampledProbe::decode(e).tokens;
      it->second.context.insert(it->second.context.end(), sampled.begin(), sampled.end());
      it->second.last_sampled_step = e.step;
      return;
    }
    case core::EventKind::drafts_proposed: check(e, core::DraftsProbe::decode(e)); return;
    default: return;
  }
}

void DrafterReference::check(const core::Event& e, const core::DraftsProbe& p) {
  const auto it = requests_.find(e.req);
  // A TP rank that lags may propose for a step the engine has since preempted the request out of:
  // that step's context is gone, and its drafts are discarded with its samples.
  if (it == requests_.end() || it->second.last_sampled_step != e.step || e.step < it->second.started_step) return;
  for (int64_t t : it->second.context)
    if (t < 0 || t >= facts_.vocab) return;  // a wrong token is the golden oracle's to report
  // An adaptive draft budget proposes the first 1..K of the reference's K drafts (the budget's
  // agreement across ranks is DecisionAgreement's to check).
  const std::vector<int64_t> got(p.drafts.begin(), p.drafts.end());
  const int k = got.empty() || static_cast<int>(got.size()) > facts_.k ? facts_.k : static_cast<int>(got.size());
  const std::vector<int64_t> want = expected(it->second, k);
  ++proposals_checked_;
  if (got == want) return;
  size_t first = 0;
  while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
  core::Finding f =
      finding_at(e, core::Verdict::output_divergence, core::FindingKind::drafter_oracle,
                 fmt::format("rank{} proposes drafts {} for request {} at engine step {}; the reference drafter "
                             "over its {} tokens of context proposes {}",
                             e.rank, token_list(got), e.req, e.step, it->second.context.size(), token_list(want)));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("propose: request {} at engine step {}", e.req, e.step), ""});
  const bool eagle = !facts_.eagle_taps.empty();
  f.details.push_back(
      first == 0
          ? eagle ? fmt::format("the first draft already differs: the EAGLE drafter fused other taps of layers "
                                "{} (a tap transfer cross-matched with another, or a tap of another layer or "
                                "row), or started from another bonus token or position",
                                token_list(std::vector<int64_t>(facts_.eagle_taps.begin(), facts_.eagle_taps.end())))
                  : std::string("the first draft already differs: the drafter started from another context "
                                "hash, bonus token or position (its anchor row, prepare_dflash_inputs, or its "
                                "embedding table)")
      : eagle ? fmt::format("the first {} drafts agree: the chain went wrong at draft {}, a forward its fused deep "
                            "state steers (the taps' digests: a tap of another layer or row), or its position or the "
                            "table entry of draft {}",
                            first, first + 1, first)
              : fmt::format("the first {} drafts agree: the chain went wrong at draft {} (its position or the table "
                            "entry of draft {})",
                            first, first + 1, first));
  report(std::move(f));
}

}  // namespace ppspec::verify
