#include "verify/monitors/model_reference.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/hash.h"
#include "engine/checkpoint.h"

namespace ppspec::verify {
void ModelReference::on_event(const core::Event& e) {
  if (!enabled()) return;
  switch (e.kind) {
    case core::EventKind::request_scheduled: on_scheduled(e, core::RequestScheduledProbe::decode(e)); return;
    case core::EventKind::inputs_built: on_inputs(e, core::InputsBuiltProbe::decode(e)); return;
    case core::EventKind::stage_output: check_output(e, core::StageOutputProbe::decode(e)); return;
    case core::EventKind::tokens_sampled: check_sampled(e, core::TokensSampledProbe::decode(e)); return;
    default: return;
  }
}

void ModelReference::on_scheduled(const core::Event& e, const core::RequestScheduledProbe& p) {
  if (e.step > pruned_at_step_) {
    pruned_at_step_ = e.step;
    requests_forgotten_idle_ += std::erase_if(requests_, [&](const auto& entry) {
      const Request& r = entry.second;
      return r.embedded_step >= 0 && r.embedded_step < e.step - kStepsIdle;
    });
  }
  if (e.req == -1) return;
  if (const auto known = requests_.find(e.req); known != requests_.end()) {
    Request& r = known->second;
    r.prefill_by_step[e.step] = p.prefill_len;
    // Bounded: a step is embedded within the batches in flight of its schedule.
    while (r.prefill_by_step.size() > kStepsScheduledKept) r.prefill_by_step.erase(r.prefill_by_step.begin());
    if (!p.prompt.empty()) {  // resumed: its prefill covers its output so far
      r.prompt_len = p.prefill_len;
      start_after_hit(r, p);
    }
    return;
  }
  if (requests_.size() >= kRequestsKept) forget_oldest();
  ++requests_followed_;
  Request& r = requests_[e.req];
  r.sequence = std::make_unique<ReferenceSequence>(*facts_.checkpoint, *facts_.model);
  r.prompt_len = p.prefill_len;
  r.prefill_by_step[e.step] = p.prefill_len;
  r.agreed.assign(static_cast<size_t>(facts_.pp * facts_.tp), false);
  start_after_hit(r, p);
  PPSPEC_ASSERT(requests_.size() <= kRequestsKept, "{} requests modelled, {} kept", requests_.size(), kRequestsKept);
}

// A prefill that starts after a prefix-cache hit: no stage embeds the tokens it reused, whose KV
// other requests computed; the model takes them from the prompt the engine core admitted.
void ModelReference::start_after_hit(Request& r, const core::RequestScheduledProbe& p) {
  if (p.num_computed <= 0 || !r.followed) return;
  const bool modelled = static_cast<size_t>(p.num_computed) <= p.prompt.size() &&
                        std::all_of(p.prompt.begin(), p.prompt.begin() + p.num_computed,
                                    [v = facts_.vocab](int64_t t) { return t >= 0 && t < v; });
  if (!modelled) {
    r.followed = false;
    ++requests_unfollowable_;
    return;
  }
  for (int64_t i = 0; i < p.num_computed; ++i)
    r.sequence->set(static_cast<size_t>(i), static_cast<int32_t>(p.prompt[static_cast<size_t>(i)]));
}

void ModelReference::forget_oldest() {
  PPSPEC_ASSERT(!requests_.empty());
  auto oldest = requests_.begin();
  for (auto it = requests_.begin(); it != requests_.end(); ++it)
    if (it->second.embedded_step < oldest->second.embedded_step) oldest = it;
  requests_.erase(oldest);
}

void ModelReference::on_inputs(const core::Event& e, const core::InputsBuiltProbe& p) {
  const auto it = requests_.find(e.req);
  if (it == requests_.end()) return skip("model oracle: input rows of requests it does not model");
  Request& r = it->second;
  // The first rank of a stage to publish a step's inputs speaks for the stage (its TP ranks embed
  // alike; one that does not computes other activations, which its own output shows).
  if (facts_.stage_of(e.rank) == 0 && r.embedded_step != e.step) follow(r, e, p);
  if (facts_.last_stage(e.rank) && r.last_ids_step != e.step) {
    r.last_ids_step = e.step;
    r.last_ids.assign(p.input_ids.begin(), p.input_ids.end());
  }
}

// Stage 0's block of ids becomes the sequence from its first position on.
void ModelReference::follow(Request& r, const core::Event& e, const core::InputsBuiltProbe& p) {
  r.embedded_step = e.step;
  r.first_position = p.first_position;
  const auto scheduled = r.prefill_by_step.find(e.step);
  r.block_prefill = scheduled != r.prefill_by_step.end() ? scheduled->second : r.prompt_len;
  r.ids.assign(p.input_ids.begin(), p.input_ids.end());
  std::fill(r.agreed.begin(), r.agreed.end(), false);
  if (!r.followed) return;
  ReferenceSequence& seq = *r.sequence;
  // A position past the known sequence, or a token outside the vocabulary, cannot be modelled:
  // stage agreement reports a wrong position or token; this monitor stops following the request.
  const bool in_vocab =
      std::all_of(r.ids.begin(), r.ids.end(), [v = facts_.vocab](int64_t t) { return t >= 0 && t < v; });
  if (r.first_position < 0 || static_cast<size_t>(r.first_position) > seq.size() || !in_vocab) {
    r.followed = false;
    ++requests_unfollowable_;
    return;
  }
  const auto first = static_cast<size_t>(r.first_position);
  PPSPEC_ASSERT(r.agreed.size() == static_cast<size_t>(facts_.pp * facts_.tp));
  for (size_t i = 0; i < r.ids.size(); ++i) seq.set(first + i, static_cast<int32_t>(r.ids[i]));
  seq.truncate(first + r.ids.size());
}

void ModelReference::check_output(const core::Event& e, const core::StageOutputProbe& p) {
  const auto it = requests_.find(e.req);
  if (it == requests_.end()) return skip("model oracle: stage outputs of requests it does not model");
  Request& r = it->second;
  // Only the step whose tokens the sequence holds: stage 0 embeds a request's next block only
  // after every stage computed the last one (the PP cadence), so this skips nothing in order.
  if (!r.followed || r.embedded_step != e.step) return;
  const int64_t layers = p.layers_done, lane_begin = p.first_lane, lanes = p.lanes;
  if (layers < 0 || layers > facts_.model->layers || lane_begin < 0 || lanes < 0 ||
      lane_begin + lanes > facts_.model->lanes)
    return;
  ReferenceSequence& seq = *r.sequence;
  for (size_t i = 0; i < p.row_count(); ++i) {
    const core::StageOutputRow row = p.row(i);
    // A position stage 0 did not embed is stage agreement's to report.
    if (row.position < 0 || static_cast<size_t>(row.position) >= seq.size()) return;
    const auto pos = static_cast<size_t>(row.position);
    const auto model_lanes =
        seq.lanes(pos, static_cast<int>(layers)).subspan(static_cast<size_t>(lane_begin), static_cast<size_t>(lanes));
    const uint64_t digest = core::fnv1a_words(model_lanes.data(), model_lanes.size());
    ++rows_checked_;
    if (static_cast<int64_t>(seq.context(pos)) == row.context_lane && static_cast<int64_t>(digest) == row.deep_hash)
      continue;
    report_output(e, p, r, i, seq.context(pos), digest);
    return;
  }
  if (e.rank >= 0 && static_cast<size_t>(e.rank) < r.agreed.size()) r.agreed[static_cast<size_t>(e.rank)] = true;
}

void ModelReference::report_output(const core::Event& e, const core::StageOutputProbe& p, Request& r, size_t row,
                                   uint32_t context, uint64_t digest) {
  PPSPEC_ASSERT(row < p.row_count(), "row {} of {}", row, p.row_count());
  const core::StageOutputRow got = p.row(row);
  const int64_t pos = got.position;
  const bool context_wrong = got.context_lane != static_cast<int64_t>(context);
  const bool lanes_wrong = got.deep_hash != static_cast<int64_t>(digest);
  std::vector<std::string> what;
  if (context_wrong)
    what.push_back(fmt::format("its context lane is {:#x}, the model's {:#x}", got.context_lane, context));
  if (lanes_wrong)
    what.push_back(fmt::format("its deep lanes {}..{} after layer {} differ (digest {:#x}, the model's {:#x})",
                               p.first_lane, p.first_lane + p.lanes - 1, p.layers_done, got.deep_hash, digest));
  const int stage = facts_.stage_of(e.rank);
  core::Finding f =
      finding_at(e, core::Verdict::output_divergence, core::FindingKind::stage_output,
                 fmt::format("rank{} (stage {}) computes request {} at position {} (engine step {}) unlike the "
                             "reference model over the tokens stage 0 embedded: {}",
                             e.rank, stage, e.req, pos, e.step, fmt::join(what, "; ")));
  f.sites.push_back(
      core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                 fmt::format("forward: request {} row {} of {} (position {})", e.req, row, p.row_count(), pos), ""});
  f.details.push_back(row == 0
                          ? fmt::format("the request's first row this step (position {}) already differs", pos)
                          : fmt::format("its rows at positions {}..{} agree: position {} is the first that differs",
                                        pos - static_cast<int64_t>(row), pos - 1, pos));
  if (context_wrong && !lanes_wrong)
    f.details.push_back(
        "only the context lane differs: it is stage 0's context_sum over the request's context KV (kv.ctx at "
        "its slots), written by embed at each position's slot: a slot or block-table error on stage 0");
  else
    f.details.push_back(stage_hint(r, e.rank));
  f.details.push_back(fmt::format("tokens stage 0 embedded for the request: {}", [&] {
    std::vector<int64_t> t;
    for (size_t at = 0; at < r.sequence->size(); ++at) t.push_back(r.sequence->token(at));
    return token_list(t);
  }()));
  report(std::move(f));
}

std::string ModelReference::stage_hint(const Request& r, core::RankId rank) const {
  const int stage = facts_.stage_of(rank);
  PPSPEC_ASSERT(r.agreed.size() == static_cast<size_t>(facts_.pp * facts_.tp));
  const engine::LayerRange own = engine::stage_layers(*facts_.model, facts_.pp, stage);
  std::vector<int> recurrent;
  for (int l = own.first; l < own.last; ++l)
    if (facts_.model->is_recurrent(l)) recurrent.push_back(l);
  const std::string state =
      recurrent.empty() ? std::string()
                        : fmt::format(
                              ", or the state of its recurrent layer(s) {} (committed at the request's last step: the "
                              "state at the accepted length, or one not rolled back past rejected drafts)",
                              fmt::join(recurrent, ", "));
  const std::string where = fmt::format(
      "its own layers {}..{} (the KV cache at the request's slots, its block table, or "
      "its weights{})",
      own.first, std::max(own.first, own.last - 1), state);
  if (stage == 0)
    return fmt::format("stage 0 embeds the tokens itself: the difference is in its embedding or {}", where);
  bool before_agreed = true;
  for (int t = 0; t < facts_.tp; ++t)
    before_agreed = before_agreed && r.agreed[static_cast<size_t>(facts_.first_rank_of(stage - 1) + t)];
  if (before_agreed)
    return fmt::format(
        "stage {} sent activations that agree with the model at this step (after layer {}): the difference "
        "arose on stage {}, in {}",
        stage - 1, own.first, stage, where);
  return fmt::format(
      "stage {}'s activations at this step were not all seen to agree (layers 0..{} run there): the "
      "difference is there or in {}",
      stage - 1, std::max(0, own.first - 1), where);
}

// The model's samples for the request's block at this step, as the rejection sampler defines them
// for a greedy request (kernels/rejection_sample.h): none for a prefill chunk that does not end
// the prompt; the model's token after the last row of the chunk that does; for a decode block, the
// model's token at each row while the next row's draft equals it, then the token that replaces
// the first rejected draft (or the bonus after the last).
std::vector<int64_t> ModelReference::expected_samples(Request& r) const {
  ReferenceSequence& seq = *r.sequence;
  const auto first = static_cast<size_t>(r.first_position);
  const size_t n = r.ids.size();
  PPSPEC_ASSERT(r.followed && r.first_position >= 0 && r.last_ids.size() == n,
                "expected samples of an unfollowed block");
  std::vector<int64_t> want;
  if (r.first_position + static_cast<int64_t>(n) < r.block_prefill) return want;
  if (r.first_position < r.block_prefill) {
    want.push_back(seq.greedy(first + n - 1));
    return want;
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t g = seq.greedy(first + i);
    want.push_back(g);
    const bool accepted = i + 1 < n && r.last_ids[i + 1] == g;  // the caller checked the sizes agree
    if (!accepted) break;
  }
  return want;
}

void ModelReference::check_sampled(const core::Event& e, const core::TokensSampledProbe& p) {
  const auto it = requests_.find(e.req);
  if (it == requests_.end() || facts_.temperature_requests.count(e.req)) return;
  Request& r = it->second;
  if (!r.followed || r.embedded_step != e.step || r.last_ids_step != e.step || r.sampled_step == e.step) return;
  r.sampled_step = e.step;                        // every TP rank of the last stage samples alike
  if (r.last_ids.size() != r.ids.size()) return;  // the stages embedded different blocks: stage agreement's
  const std::vector<int64_t> want = expected_samples(r);
  ++samples_checked_;
  const std::vector<int64_t> got(p.tokens.begin(), p.tokens.end());
  if (got == want) return;
  size_t first = 0;
  while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
  core::Finding f = finding_at(
      e, core::Verdict::output_divergence, core::FindingKind::greedy_sample,
      fmt::format("rank{} samples {} for greedy request {} at engine step {}; the reference model over "
                  "the block stage 0 embedded at position {} ({}) gives {}",
                  e.rank, token_list(got), e.req, e.step, r.first_position, token_list(r.ids), token_list(want)));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("rejection_sample: request {} at engine step {}", e.req, e.step), ""});
  PPSPEC_ASSERT(r.agreed.size() == static_cast<size_t>(facts_.pp * facts_.tp));
  bool last_agreed = true;
  for (int t = 0; t < facts_.tp; ++t)
    last_agreed = last_agreed && r.agreed[static_cast<size_t>(facts_.first_rank_of(facts_.pp - 1) + t)];
  if (first < got.size() && first < want.size())
    f.details.push_back(fmt::format("token #{} is {}, the model's {}", first, got[first], want[first]));
  else
    f.details.push_back(
        fmt::format("the first {} tokens agree; the engine sampled {}, the model {}", first, got.size(), want.size()));
  f.details.push_back(last_agreed
                          ? "the last stage's activations for every row agree with the model: the difference is in "
                            "the head, the logits or the rejection sampler (which rows it reads, which drafts it "
                            "compares)"
                          : "the last stage's activations were not all seen to agree with the model: look there first");
  report(std::move(f));
}

}  // namespace ppspec::verify
