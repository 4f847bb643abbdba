#include "verify/monitors/stage_agreement.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/probes.h"
#include "kernels/write_check.h"

namespace ppspec::verify {

void StageAgreement::on_event(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::warmup_phase:
      if (e.subject.phase == core::WarmupPhase::serving) serving_[e.rank] = true;
      return;
    case core::EventKind::request_scheduled: on_scheduled(e, core::RequestScheduledProbe::decode(e)); return;
    case core::EventKind::step_returned: returned_through_ = std::max(returned_through_, e.step); return;
    case core::EventKind::tokens_sampled:
      on_sampled(e, core::TokensSampledProbe::decode(e));
      if (facts_.pp > 1 && e.req >= 0) {
        auto& reqs = sampled_reqs_[e.step];
        if (std::find(reqs.begin(), reqs.end(), e.req) == reqs.end()) {
          reqs.push_back(e.req);
          check_dropped(e.step, e.req, e);
        }
      }
      return;
    case core::EventKind::batch_scheduled: {
      const auto batch = core::BatchScheduledProbe::decode(e);
      batches_[e.step].assign(batch.request_ids.begin(), batch.request_ids.end());
      while (!batches_.empty() && batches_.begin()->first < e.step - kStepsKept) batches_.erase(batches_.begin());
      while (!gates_.empty() && gates_.begin()->first < e.step - kStepsKept) gates_.erase(gates_.begin());
      while (!sampled_reqs_.empty() && sampled_reqs_.begin()->first < e.step - kStepsKept)
        sampled_reqs_.erase(sampled_reqs_.begin());
      PPSPEC_ASSERT(batches_.begin()->first >= e.step - kStepsKept && batches_.count(e.step) == 1);
      return;
    }
    case core::EventKind::gate: {
      if (gates_.count(e.step)) return;  // gate agreement compares the ranks
      const auto gate = core::GateProbe::decode(e);
      gates_[e.step] = Gate{e.rank, gate.posts_feedback, {gate.rows.begin(), gate.rows.end()}};
      if (const auto it = sampled_reqs_.find(e.step); it != sampled_reqs_.end())
        for (int64_t req : it->second) check_dropped(e.step, req, e);
      return;
    }
    case core::EventKind::inputs_built: on_inputs(e, core::InputsBuiltProbe::decode(e)); return;
    case core::EventKind::feedback_adopted:
      if (e.req >= 0 && serving_[e.rank]) {
        const auto adopted = core::FeedbackAdoptedProbe::decode(e);
        check_slot(e, adopted);
        check_adoption(e, adopted);
      }
      return;
    case core::EventKind::table_updated:
      if (serving_[e.rank]) {
        // One table per rank, overwritten in place: kept only until the update's bonus rows are checked.
        const auto t = core::TableUpdatedProbe::decode(e);
        const auto built = built_through_.find(e.rank);
        Updated& u = updated_[e.rank];
        u.step = e.step;
        u.last_sampled.assign(t.last_sampled.begin(), t.last_sampled.end());
        u.built_through = built == built_through_.end() ? -1 : built->second;
      }
      return;
    case core::EventKind::bonus_adopted:
      if (e.req >= 0 && serving_[e.rank]) check_bonus(e, core::BonusAdoptedProbe::decode(e));
      return;
    default: return;
  }
}

void StageAgreement::on_scheduled(const core::Event& e, const core::RequestScheduledProbe& p) {
  scheduled_[{e.step, e.req}] = Scheduled{static_cast<int32_t>(p.num_computed), static_cast<int32_t>(p.num_scheduled),
                                          ahead_of(e, p), p.state_index};
  if (!p.prompt.empty() && prompts_.count(e.req)) {  // resumed after a preemption: prompt and output so far
    prompts_[e.req].assign(p.prompt.begin(), p.prompt.end());
  } else if (!p.prompt.empty()) {  // a new request: its prompt
    prompts_[e.req].assign(p.prompt.begin(), p.prompt.end());
    prompt_order_.push_back(e.req);
    if (prompt_order_.size() > kPromptsKept) {
      prompts_.erase(prompt_order_.front());
      prompt_order_.pop_front();
    }
  }
  auto& owners = owners_[p.state_index];
  if (owners.empty() || owners.back().req != e.req) owners.push_back(Owner{e.req, e.step});
  if (owners.size() > kSampledKept) owners.pop_front();
  PPSPEC_ASSERT(!owners.empty() && owners.size() <= kSampledKept && prompt_order_.size() <= kPromptsKept);
  PPSPEC_ASSERT(prompts_.size() == prompt_order_.size(), "{} prompts kept, {} in admission order", prompts_.size(),
                prompt_order_.size());
  // Bounded: a step's inputs are built within pp steps of its schedule.
  while (!scheduled_.empty() && scheduled_.begin()->first.first < e.step - kStepsKept)
    scheduled_.erase(scheduled_.begin());
  PPSPEC_ASSERT(scheduled_.count({e.step, e.req}) == 1);
}

void StageAgreement::on_sampled(const core::Event& e, const core::TokensSampledProbe& p) {
  if (e.req < 0) return;
  auto& list = sampled_[e.req];
  if (!list.empty() && list.back().step == e.step) return;  // every TP rank of the last stage samples alike
  list.push_back(Sampled{e.step, {p.tokens.begin(), p.tokens.end()}, p.num_rejected});
  if (list.size() > kSampledKept) list.pop_front();
  PPSPEC_ASSERT(!list.empty() && list.size() <= kSampledKept);
}

void StageAgreement::on_inputs(const core::Event& e, const core::InputsBuiltProbe& p) {
  built_through_[e.rank] = std::max(built_through_[e.rank], e.step);  // its mapping buffer holds this batch
  if (e.req == -1) return;
  // Positions are exact in every phase: warmup's steps run one at a time and draft nothing, so
  // no stage has a correction pending. The bonus token is relayed only once feedback is on.
  check_position(e, p);
  if (!p.decode_row) check_prompt(e, p);
  if (e.req >= 0 && serving_[e.rank] && p.decode_row && !p.input_ids.empty()) check_token(e, p);
}

const StageAgreement::Sampled* StageAgreement::sampled_before(int64_t req, int64_t step) const {
  const auto it = sampled_.find(req);
  if (it == sampled_.end()) return nullptr;
  const Sampled* latest = nullptr;
  for (const Sampled& s : it->second)
    if (s.step < step) latest = &s;
  return latest;
}

const StageAgreement::Sampled* StageAgreement::sampled_at(int64_t req, int64_t step) const {
  const auto it = sampled_.find(req);
  if (it == sampled_.end()) return nullptr;
  for (const Sampled& s : it->second)
    if (s.step == step) return &s;
  PPSPEC_ASSERT(it->second.size() <= kSampledKept);
  return nullptr;
}

void StageAgreement::check_position(const core::Event& e, const core::InputsBuiltProbe& p) {
  const auto it = scheduled_.find({e.step, e.req});
  if (it == scheduled_.end()) return skip("stage agreement: inputs of a request its step's schedule on record lacks");
  const int64_t embedded = p.first_position;
  const std::optional<int64_t> exact = computed_at(e.req, it->second);
  // The last stage samples a step before any stage embeds the next that runs ahead of it (every
  // stage's inputs wait for that sample, on the device); if its sample is not known, the position
  // can only be bounded by the drafts in question.
  const int64_t computed = exact.value_or(it->second.num_computed);
  if (!exact && embedded <= computed && embedded >= computed - facts_.k) return;
  if (embedded == computed && embedded >= 0) return;
  const int stage = facts_.stage_of(e.rank);
  core::Finding f =
      finding_at(e, core::Verdict::stage_divergence, core::FindingKind::stage_position,
                 fmt::format("rank{} (stage {}) embeds request {} at position {} at engine step {}, but the "
                             "engine core has computed {} of its tokens",
                             e.rank, stage, e.req, embedded, e.step, computed));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("prepare_inputs: request {} at position {}", e.req, embedded), ""});
  f.details.push_back(position_hint(e.req, e.step, embedded - computed));
  report(std::move(f));
}

int64_t StageAgreement::ahead_of(const core::Event& e, const core::RequestScheduledProbe& p) {
  const auto last = last_scheduled_.find(e.req);
  const bool fresh = last == last_scheduled_.end() || !p.prompt.empty();  // new, or resumed: its count starts over
  const int64_t previous = fresh ? -1 : last->second;
  last_scheduled_[e.req] = e.step;
  // Bounded: a request not scheduled for kStepsKept steps has ended (or waits, and resumes afresh).
  std::erase_if(last_scheduled_, [&](const auto& kv) { return kv.second < e.step - kStepsKept; });
  return previous > returned_through_ ? previous : -1;
}

std::optional<int64_t> StageAgreement::computed_at(int64_t req, const Scheduled& s) const {
  if (s.placeholders_of < 0) return s.num_computed;
  const Sampled* ahead_of = sampled_at(req, s.placeholders_of);
  if (ahead_of == nullptr) return std::nullopt;
  return s.num_computed - ahead_of->rejected;
}

std::string StageAgreement::position_hint(int64_t req, int64_t step, int64_t delta) const {
  const Sampled* prev = sampled_before(req, step);
  if (prev != nullptr && prev->rejected != 0 && delta == prev->rejected)
    return fmt::format(
        "the request's previous step (engine step {}) rejected {} drafts and the position is {} ahead: the "
        "stage advanced by the whole query and the correction that subtracts the rejected drafts "
        "(post_update[deferred]) did not apply",
        prev->step, prev->rejected, delta);
  if (prev != nullptr && prev->rejected != 0 && delta == -prev->rejected)
    return fmt::format(
        "the position is {} behind, the {} drafts rejected at engine step {}: they were subtracted twice, or "
        "the stage never advanced by its query",
        -delta, prev->rejected, prev->step);
  if (prev != nullptr && delta == static_cast<int64_t>(prev->tokens.size()))
    return "the position is ahead by the tokens sampled at the request's previous step: they were counted twice";
  return fmt::format(
      "the stage's computed-token count for the request is off by {} (its table's num_computed, or the "
      "positions prepare_inputs derives from it)",
      delta);
}

void StageAgreement::check_token(const core::Event& e, const core::InputsBuiltProbe& p) {
  const Sampled* prev = sampled_before(e.req, e.step);
  if (prev == nullptr || prev->tokens.empty()) return;
  const int64_t embedded = p.input_ids.front();
  if (embedded == prev->tokens.back()) return;
  const int stage = facts_.stage_of(e.rank);
  core::Finding f = finding_at(
      e, core::Verdict::stage_divergence, core::FindingKind::stage_token,
      fmt::format("rank{} (stage {}) embeds token {} as request {}'s bonus token at engine step {}, "
                  "but the last stage sampled {} at engine step {} (its last token: {})",
                  e.rank, stage, embedded, e.req, e.step, token_list(prev->tokens), prev->step, prev->tokens.back()));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("prepare_inputs: request {} decode row", e.req), ""});
  PPSPEC_ASSERT(facts_.first_rank_of(facts_.pp - 1) == facts_.pp * facts_.tp - facts_.tp);
  f.sites.push_back(core::Site{facts_.pp * facts_.tp - facts_.tp, "", "", -1,
                               fmt::format("rejection_sample: request {} at engine step {}", e.req, prev->step), ""});
  f.details.push_back(token_hint(e.req, e.step, embedded));
  report(std::move(f));
}

void StageAgreement::check_prompt(const core::Event& e, const core::InputsBuiltProbe& p) {
  // A prefill chunk embeds the prompt's tokens from its first position on.
  const auto it = prompts_.find(e.req);
  if (it == prompts_.end() || p.first_position < 0) return;  // a negative position is check_position's
  const std::vector<int64_t>& prompt = it->second;
  for (size_t i = 0; i < p.input_ids.size(); ++i) {
    const auto pos = static_cast<size_t>(p.first_position) + i;
    const int64_t id = p.input_ids[i];
    if (pos < prompt.size() && id == prompt[pos]) continue;
    const std::string want = pos < prompt.size() ? fmt::format("the prompt has {}", prompt[pos])
                                                 : fmt::format("the prompt has only {} tokens", prompt.size());
    core::Finding f =
        finding_at(e, core::Verdict::stage_divergence, core::FindingKind::stage_token,
                   fmt::format("rank{} (stage {}) embeds token {} at position {} of request {}'s prefill at "
                               "engine step {}; {}",
                               e.rank, facts_.stage_of(e.rank), id, pos, e.req, e.step, want));
    f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                                 fmt::format("prepare_inputs: request {} prefill row {}", e.req, i), ""});
    const auto found = std::find(prompt.begin(), prompt.end(), id);
    f.details.push_back(
        found != prompt.end()
            ? fmt::format("it is the prompt's token at position {}: the chunk read the prompt at an offset "
                          "of {} (chunked prefill's start, or the token table's row)",
                          found - prompt.begin(), (found - prompt.begin()) - static_cast<int64_t>(pos))
            : "it is not in the request's prompt: the row read another request's prompt or memory its "
              "admission never wrote");
    report(std::move(f));
    return;
  }
}

std::string StageAgreement::token_hint(int64_t req, int64_t step, int64_t token) const {
  const Sampled* prev = sampled_before(req, step);
  PPSPEC_ASSERT(prev != nullptr && !prev->tokens.empty(), "no tokens sampled for request {} before step {}", req, step);
  for (size_t j = 0; j + 1 < prev->tokens.size(); ++j)
    if (prev->tokens[j] == token)
      return fmt::format(
          "it is the sampled token at column {} of {}: the adoption took the wrong column (the last "
          "accepted token is column num_sampled - 1)",
          j, prev->tokens.size());
  if (const Sampled* older = sampled_before(req, prev->step);
      older != nullptr && !older->tokens.empty() && older->tokens.back() == token)
    return fmt::format(
        "it is the bonus of engine step {}, one step older: this stage did not adopt the feedback of engine "
        "step {} (a gate, a generation counter or a feedback slot skipped it)",
        older->step, prev->step);
  return "it matches none of the request's sampled tokens: the stage read another request's row or another step's slot";
}

int StageAgreement::gate_row(int64_t step, int64_t req) const {
  const auto g = gates_.find(step);
  const auto b = batches_.find(step);
  if (g == gates_.end() || b == batches_.end()) return -1;
  if (!g->second.posts_feedback) return 0;
  const auto at = std::find(b->second.begin(), b->second.end(), req);
  const auto row = static_cast<size_t>(at - b->second.begin());
  if (at == b->second.end() || row >= g->second.rows.size()) return -1;
  return g->second.rows[row] != 0 ? 1 : 0;
}

void StageAgreement::check_dropped(int64_t step, int64_t req, const core::Event& e) {
  if (gate_row(step, req) != 0) return;
  PPSPEC_ASSERT(gates_.count(step) == 1 && batches_.count(step) == 1, "a dropped row at step {} without its gate",
                step);
  const Gate& g = gates_.at(step);
  const Sampled* s = sampled_at(req, step);
  core::Finding f = finding_at(
      e, core::Verdict::stage_divergence, core::FindingKind::feedback_dropped,
      fmt::format("the last stage sampled {} for request {} at engine step {}, but the feedback gate of that step {} "
                  "(rank{}): the earlier stages never adopt these tokens",
                  s ? token_list(s->tokens) : "tokens", req, step,
                  !g.posts_feedback ? "posts no feedback at all" : "leaves the request's row out", g.rank));
  f.engine_step = step;
  f.sites.push_back(core::Site{g.rank, fmt::format("rank{}.side", g.rank), "", -1,
                               fmt::format("need_sampled_mask: engine step {}", step), ""});
  f.details.push_back(
      "the gate must include every row that produces a sample (vLLM compute_need_sampled_mask: "
      "num_computed + num_scheduled >= prefill_len, a final prefill chunk included); every rank "
      "agreed on this gate, so it is the rule itself that is wrong, not one rank");
  report(std::move(f));
}

void StageAgreement::check_slot(const core::Event& e, const core::FeedbackAdoptedProbe& p) {
  // The row it wrote must still be the request's: a slot freed and given to another request since
  // the feedback's step holds that request's state now (the generation counters skip such rows).
  // The update of step T runs at the start of step T + pp on this rank, before that step's frees
  // and admissions: a new owner scheduled in between, at T < S < T + pp, holds the row by then.
  const auto it = owners_.find(p.state_index);
  if (it == owners_.end()) return skip("stage agreement: adoptions into a table row no owner on record held");
  const Owner* reused = nullptr;
  for (const Owner& o : it->second)
    if (o.req != e.req && o.since > e.step && o.since < e.step + facts_.pp) reused = &o;
  if (reused == nullptr) return;
  PPSPEC_ASSERT(reused->since > e.step && reused->since < e.step + facts_.pp && reused->req != e.req);
  core::Finding f = finding_at(
      e, core::Verdict::stage_divergence, core::FindingKind::stage_adoption,
      fmt::format(
          "rank{} (stage {}) adopts request {}'s feedback of engine step {} into table row {}, which request {} "
          "holds since engine step {}",
          e.rank, facts_.stage_of(e.rank), e.req, e.step, p.state_index, reused->req, reused->since));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("post_update[deferred]: row {}", p.state_index), ""});
  f.details.push_back(
      fmt::format("request {} left the batch (finished or aborted) while its step {} was in flight; the "
                  "row was freed and reused, so the update should have skipped it (the generation "
                  "counter of the row, bumped when it was freed)",
                  e.req, e.step));
  report(std::move(f));
}

void StageAgreement::check_adoption(const core::Event& e, const core::FeedbackAdoptedProbe& p) {
  const Sampled* s = sampled_at(e.req, e.step);
  if (s == nullptr) return skip("stage agreement: adoptions of a step whose samples are not on record");
  PPSPEC_ASSERT(s->step == e.step);
  const std::vector<int64_t> tokens(p.sampled.begin(), p.sampled.end());
  if (p.num_sampled == static_cast<int64_t>(s->tokens.size()) && p.num_rejected == s->rejected && tokens == s->tokens)
    return;
  core::Finding f = finding_at(
      e, core::Verdict::stage_divergence, core::FindingKind::stage_adoption,
      fmt::format(
          "rank{} (stage {}) adopts for request {} from the feedback of engine step {}: {} sampled {}, {} rejected; "
          "the last stage sampled {}, {} rejected",
          e.rank, facts_.stage_of(e.rank), e.req, e.step, p.num_sampled, token_list(tokens), p.num_rejected,
          token_list(s->tokens), s->rejected));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("post_update[deferred]: request {}", e.req), ""});
  f.details.push_back(adoption_hint(e, p));
  report(std::move(f));
}

namespace {

// An element no kernel or copy ever stored holds the allocation's poison bytes (0xA5): a token
// (i64) or a count (i32, widened to i64 by the probe).
bool poison(int64_t v) {
  const auto word = static_cast<uint64_t>(kernels::kPoisonWord);
  return static_cast<uint64_t>(v) == (word << 32 | word) || v == static_cast<int32_t>(kernels::kPoisonWord);
}

}  // namespace

std::string StageAgreement::adoption_hint(const core::Event& e, const core::FeedbackAdoptedProbe& p) const {
  const std::vector<int64_t> tokens(p.sampled.begin(), p.sampled.end());
  if (poison(p.num_sampled) || poison(p.num_rejected) || std::any_of(tokens.begin(), tokens.end(), poison))
    return fmt::format(
        "the row holds the allocation's poison (0xA5 bytes: {}): nothing ever wrote it; the update read a feedback "
        "row no receive filled (a slot never received into, or a row past what the last stage sent)",
        poison(p.num_sampled) || poison(p.num_rejected) ? "the counts" : "a sampled token");
  if (const auto it = sampled_.find(e.req); it != sampled_.end())
    for (const Sampled& s : it->second)
      if (s.step != e.step && s.tokens == tokens)
        return fmt::format(
            "they are what the last stage sampled for the request at engine step {}: the update read the "
            "feedback slot of another step (the FIFO or the slot ring is off)",
            s.step);
  for (const auto& [req, list] : sampled_)
    for (const Sampled& s : list)
      if (req != e.req && s.step == e.step && s.tokens == tokens)
        return fmt::format("they are request {}'s at the same step: the update read another row of the batch", req);
  return "the feedback arrived changed: paired with another message of the same size, or its buffer was overwritten "
         "before the update read it";
}

void StageAgreement::check_bonus(const core::Event& e, const core::BonusAdoptedProbe& p) {
  const Sampled* s = sampled_at(e.req, e.step);
  if (s == nullptr || s->tokens.empty() || p.token == s->tokens.back()) return;
  core::Finding f =
      finding_at(e, core::Verdict::stage_divergence, core::FindingKind::stage_adoption,
                 fmt::format("rank{} (stage {}) leaves token {} as request {}'s bonus token in row {} after adopting "
                             "the feedback of engine step {}, but the last stage sampled {} (its last token: {})",
                             e.rank, facts_.stage_of(e.rank), p.token, e.req, p.state_index, e.step,
                             token_list(s->tokens), s->tokens.back()));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("post_update[deferred]: last_sampled[{}]", p.state_index), ""});
  const std::string mapping = mapping_hint(e.rank, e.step);
  f.details.push_back(mapping.empty() ? bonus_hint(e.req, e.step, p.token) : mapping);
  report(std::move(f));
}

bool StageAgreement::written_later(int64_t token, int64_t step, const std::vector<int64_t>& batch,
                                   size_t position) const {
  for (size_t j = position + 1; j < batch.size(); ++j)
    if (const Sampled* s = sampled_at(batch[j], step); s != nullptr && !s->tokens.empty() && s->tokens.back() == token)
      return true;
  return false;
}

std::optional<StageAgreement::MappingMatch> StageAgreement::mapping_of(const std::vector<int64_t>& table, int64_t step,
                                                                       const std::vector<int64_t>& batch, int64_t other,
                                                                       const std::vector<int64_t>& other_batch) const {
  MappingMatch m{other, 0, 0, -1};
  for (size_t i = 0; i < batch.size() && i < other_batch.size(); ++i) {
    const Sampled* s = sampled_at(batch[i], step);
    const auto there = scheduled_.find({other, other_batch[i]});
    const auto own = scheduled_.find({step, batch[i]});
    if (s == nullptr || s->tokens.empty() || there == scheduled_.end() || own == scheduled_.end()) continue;
    const int64_t row = there->second.state_index;
    // A position kept in its own row says nothing about which mapping the writes followed.
    if (row < 0 || static_cast<size_t>(row) >= table.size() || row == own->second.state_index) continue;
    if (table[static_cast<size_t>(row)] != s->tokens.back()) {
      // A later position's write to the same row wins (a stale tail of the mapping can repeat a
      // row); anything else in the row says the writes did not follow this mapping.
      if (!written_later(table[static_cast<size_t>(row)], step, batch, i)) return std::nullopt;
      continue;
    }
    if (m.matched++ == 0) {
      m.position = i;
      m.row = row;
    }
  }
  if (m.matched == 0) return std::nullopt;
  return m;
}

std::string StageAgreement::mapping_hint(core::RankId rank, int64_t step) const {
  const auto u = updated_.find(rank);
  const auto batch = batches_.find(step);
  if (u == updated_.end() || u->second.step != step || batch == batches_.end()) return "";
  // The mapping buffer can hold only a batch this rank prepared: the latest that explains the table.
  std::optional<MappingMatch> best;
  for (const auto& [other, other_batch] : batches_) {
    if (other == step || other > u->second.built_through) continue;
    if (const auto m = mapping_of(u->second.last_sampled, step, batch->second, other, other_batch)) best = m;
  }
  if (!best) return "";
  const int64_t req = batch->second[best->position];
  const int64_t holder = batches_.at(best->step)[best->position];
  return fmt::format(
      "the update wrote engine step {}'s feedback through the row mapping of engine step {}'s batch: the "
      "tokens of batch position {} (request {}) landed in row {}, request {}'s at step {} ({} position{} "
      "alike); a deferred update must scatter through the mapping saved with its step's receive (vLLM: "
      "the idx_mapping of the batch the feedback belongs to), not the current batch's",
      step, best->step, best->position, req, best->row, holder, best->step, best->matched,
      best->matched == 1 ? "" : "s");
}

std::string StageAgreement::bonus_hint(int64_t req, int64_t step, int64_t token) const {
  if (const Sampled* own = sampled_at(req, step)) {
    const auto at = std::find(own->tokens.begin(), own->tokens.end(), token);
    if (at != own->tokens.end())
      return fmt::format(
          "it is token {} of the {} the last stage sampled at that step, not the last: the update took another "
          "column of the sampled row",
          at - own->tokens.begin(), own->tokens.size());
  }
  for (const auto& [other, list] : sampled_)
    for (const Sampled& s : list)
      if (other != req && s.step == step && !s.tokens.empty() && s.tokens.back() == token)
        return fmt::format(
            "it is request {}'s last token at the same step: the update wrote that row's feedback into this "
            "request's row (the row-to-request mapping is off)",
            other);
  if (const auto it = sampled_.find(req); it != sampled_.end())
    for (const Sampled& s : it->second)
      if (s.step != step && !s.tokens.empty() && s.tokens.back() == token)
        return fmt::format("it is the request's last token of engine step {}: the row kept an older step's feedback",
                           s.step);
  return "the slot it read held the right tokens (feedback_adopted): the update wrote another column, or something "
         "wrote the "
         "row after it";
}

}  // namespace ppspec::verify
