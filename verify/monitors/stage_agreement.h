// Stage agreement (verdict `stage-divergence`): every pipeline stage embeds, for a request at an
// engine step, what the engine core and the last stage decided, checked at the first rank and
// step that embeds something else:
//  * `stage-position`: the position a rank embeds is the engine core's computed-token count for
//    the request at that step, and never negative (an earlier stage advances optimistically by
//    the whole query and subtracts the rejected drafts pp steps later); a step scheduled while the
//    request's previous one was in flight counts that step's drafts as accepted, and every stage
//    embeds the count less the drafts the last stage rejected at that step;
//  * `stage-token`: a decode row's first token is the last token the last stage sampled for the
//    request at its previous step (the bonus token); a prefill row's tokens are the request's
//    prompt at those positions;
//  * `stage-adoption`: the sampled tokens and counts an earlier stage's deferred update adopts
//    from step T's feedback are the ones the last stage sampled at T, into a row the request
//    still holds; and the bonus token it leaves in the request's row (read back from the table
//    after the kernel, not from the slot it read) is the last token the last stage sampled at T;
//  * `feedback-dropped`: a row the last stage sampled at step T is in step T's feedback (the gate
//    of every rank says so): otherwise the earlier stages never learn its tokens.
// The drafts a stage embeds and adopts are draft freshness's (verify/monitors/draft_freshness.h). Each
// report's hint follows from the numbers: what the wrong value equals says how it went wrong.
// Positions are checked in every phase, warmup's synthetic requests included (its steps run one at
// a time and draft nothing, so no correction is pending); tokens and adoption from a rank's
// "serving" phase on, for real requests (warmup's synthetic ones get no feedback).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class StageAgreement final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::warmup_phase, core::EventKind::request_scheduled, core::EventKind::step_returned,
                     core::EventKind::tokens_sampled, core::EventKind::batch_scheduled, core::EventKind::gate,
                     core::EventKind::inputs_built, core::EventKind::feedback_adopted, core::EventKind::table_updated,
                     core::EventKind::bonus_adopted});
  }

  // Steps of sampling results remembered per request, and steps of schedules remembered.
  static constexpr size_t kSampledKept = 4;
  static constexpr int64_t kStepsKept = 64;
  // Prompts remembered (a request's prefill ends within a few steps of its admission).
  static constexpr size_t kPromptsKept = 1024;

 private:
  struct Scheduled {
    int32_t num_computed = 0;
    int32_t num_tokens = 0;
    int64_t placeholders_of = -1;  // the step in flight whose drafts num_computed counts as accepted
    int64_t state_index = -1;      // the request's table row at the step
  };
  struct Sampled {
    int64_t step = -1;
    std::vector<int64_t> tokens;
    int64_t rejected = 0;
  };
  void on_scheduled(const core::Event& e, const core::RequestScheduledProbe& p);
  // The request's previous step, if the engine core scheduled this one before that step returned
  // (its step_returned comes later): the step its count runs ahead of; -1 otherwise.
  int64_t ahead_of(const core::Event& e, const core::RequestScheduledProbe& p);
  void on_sampled(const core::Event& e, const core::TokensSampledProbe& p);
  void on_inputs(const core::Event& e, const core::InputsBuiltProbe& p);
  void check_position(const core::Event& e, const core::InputsBuiltProbe& p);
  // The engine core's count at the step, less the drafts rejected by the step in flight it ran
  // ahead of; nullopt while that step's sample is not known here.
  std::optional<int64_t> computed_at(int64_t req, const Scheduled& s) const;
  void check_token(const core::Event& e, const core::InputsBuiltProbe& p);
  void check_prompt(const core::Event& e, const core::InputsBuiltProbe& p);
  void check_adoption(const core::Event& e, const core::FeedbackAdoptedProbe& p);
  void check_bonus(const core::Event& e, const core::BonusAdoptedProbe& p);
  // Whose sample `token` is: the request's at another step, or another request's at `step`.
  std::string bonus_hint(int64_t req, int64_t step, int64_t token) const;
  // Whether `rank`'s update of `step` wrote the step's tokens through another batch's row mapping
  // (table_updated): what it says, or empty.
  std::string mapping_hint(core::RankId rank, int64_t step) const;
  struct MappingMatch {
    int64_t step = -1;    // the batch whose row mapping the writes followed
    size_t matched = 0;   // positions whose token landed in that batch's row for the position
    size_t position = 0;  // the first of them
    int64_t row = -1;     // where its token landed
  };
  // Whether a position after `position` of the batch wrote `token` (its step's last token).
  bool written_later(int64_t token, int64_t step, const std::vector<int64_t>& batch, size_t position) const;
  std::optional<MappingMatch> mapping_of(const std::vector<int64_t>& table, int64_t step,
                                         const std::vector<int64_t>& batch, int64_t other,
                                         const std::vector<int64_t>& other_batch) const;
  const Sampled* sampled_before(int64_t req, int64_t step) const;
  const Sampled* sampled_at(int64_t req, int64_t step) const;
  std::string position_hint(int64_t req, int64_t step, int64_t delta) const;
  std::string token_hint(int64_t req, int64_t step, int64_t token) const;
  std::string adoption_hint(const core::Event& e, const core::FeedbackAdoptedProbe& p) const;

  struct Owner {
    int64_t req = -1;
    int64_t since = -1;  // the first step the engine core scheduled it in this slot
  };
  void check_slot(const core::Event& e, const core::FeedbackAdoptedProbe& p);
  // The gate's row for a request sampled at a step: 1 sent, 0 dropped, -1 unknown yet.
  int gate_row(int64_t step, int64_t req) const;
  void check_dropped(int64_t step, int64_t req, const core::Event& e);
  std::map<int64_t, std::vector<int64_t>> batches_;  // by step: request ids in batch order
  std::map<int64_t, int64_t> last_scheduled_;        // by request: the step it was last scheduled in
  int64_t returned_through_ = -1;                    // steps return in order: the last that did
  struct Gate {
    core::RankId rank = -1;
    bool posts_feedback = false;
    std::vector<int64_t> rows;
  };
  std::map<int64_t, Gate> gates_;                               // by step: the first rank's gate
  std::map<int64_t, std::vector<int64_t>> sampled_reqs_;        // by step: requests the last stage sampled
  std::map<std::pair<int64_t, int64_t>, Scheduled> scheduled_;  // by (step, request)
  // By req-state index, the latest few owners: the engine core schedules ahead of the stages.
  std::map<int64_t, std::deque<Owner>> owners_;
  std::map<int64_t, std::deque<Sampled>> sampled_;  // by request, latest last
  std::map<core::RankId, bool> serving_;
  struct Updated {
    int64_t step = -1;
    std::vector<int64_t> last_sampled;  // by req-state index
    int64_t built_through = -1;         // the latest step whose inputs the rank had built by then
  };
  std::map<core::RankId, Updated> updated_;          // by rank: its latest deferred update's table
  std::map<core::RankId, int64_t> built_through_;    // by rank: the latest step it built inputs for
  std::map<int64_t, std::vector<int64_t>> prompts_;  // by request, while its prefill may run
  std::deque<int64_t> prompt_order_;                 // admission order, to forget the oldest
};

}  // namespace ppspec::verify
