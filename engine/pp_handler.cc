#include "engine/pp_handler.h"

#include <fmt/format.h>

#include "engine/probe.h"

namespace ppspec::engine {

std::optional<std::vector<bool>> need_sampled_mask(const SchedulerOutput& so) {
  std::vector<bool> mask;
  bool any = false;
  for (const ScheduledRequest& r : so.requests) {
    mask.push_back(r.produces_sample());
    any = any || mask.back();
  }
  if (!any) return std::nullopt;
  return mask;
}

PPHandler::PPHandler(RankContext& ctx, core::Communicator& bcast)
    : rt_(ctx.rt),
      dev_(ctx.dev),
      bcast_(bcast),
      stage_(ctx.stage),
      pp_(ctx.pp),
      k_(ctx.k),
      variant_(ctx.cfg.spec.feedback),
      stale_drafts_(ctx.cfg.faults.stale_drafts),
      narrow_width_(ctx.cfg.faults.narrow_sampled_width),
      lookahead_past_ring_(ctx.cfg.faults.lookahead_past_ring && ctx.cfg.schedules_ahead()),
      nonfinal_feedback_(ctx.cfg.faults.feedback_for_nonfinal_chunks),
      main_(ctx.main),
      side_(ctx.side) {
  const int64_t n = ctx.max_reqs;
  gen_.assign(static_cast<size_t>(n), 0);
  slots_.resize(static_cast<size_t>(pp_ + 1));
  for (size_t i = 0; i < slots_.size(); ++i) {
    FeedbackBuffers& s = slots_[i];
    s.sampled = ctx.alloc(core::Dtype::i64, n, k_ + 1, "feedback.sampled");
    s.counts = ctx.alloc(core::Dtype::i32, 2, n, "feedback.counts");
    s.drafts = ctx.alloc(core::Dtype::i64, n, std::max(k_, 1), "feedback.drafts");
    s.payload = ctx.alloc(core::Dtype::i64, n, 2 * k_ + 3, "feedback.payload");
    s.done = dev_.event(fmt::format("feedback.slot{}", i));
  }
  main_ready_ = dev_.event("feedback.main_ready");
  if (!is_last())
    for (int i = 0; i < pp_; ++i) queue_.emplace_back(std::nullopt);  // pre-seeded: the first pp steps adopt nothing
}

std::optional<std::vector<bool>> PPHandler::posted_mask(const SchedulerOutput& so) const {
  std::optional<std::vector<bool>> mask = need_sampled_mask(so);
  // vLLM before #38726 broadcast the sampled tokens of every step, those of a step whose requests
  // are all non-final chunks too (their samples are discarded): every rank posts, nothing is adopted.
  // An idle step has no rows and is not launched in vLLM at all: it posts nothing either way.
  if (!mask && nonfinal_feedback_ && !so.requests.empty()) mask.emplace(so.requests.size(), false);
  return mask;
}

bool PPHandler::posts_without_samples(const SchedulerOutput& so) const {
  if (disabled_ || need_sampled_mask(so)) return false;
  return posted_mask(so).has_value();
}

void PPHandler::publish_gate(const SchedulerOutput& so, const std::optional<std::vector<bool>>& mask) {
  if (!rt_.events().active()) return;
  std::vector<int64_t> rows;
  if (mask)
    for (bool b : *mask) rows.push_back(b ? 1 : 0);
  publish(rt_, Probe{dev_.rank(), so.step, -1}, core::GateProbe{mask.has_value(), rows});
}

void PPHandler::side_waits_main() {
  dev_.record(main_ready_, main_);
  dev_.stream_wait(side_, main_ready_);
}

void PPHandler::receive(const SchedulerOutput& so) {
  // The slot of step T is consumed at T+pp whatever happens: reserve it now.
  queue_.emplace_back(std::nullopt);
  if (disabled_) return;
  const auto mask = posted_mask(so);
  publish_gate(so, mask);
  if (!mask) return;  // nothing posted: the last stage's gate says the same
  if (falls_behind()) return;
  const auto n = static_cast<int64_t>(so.requests.size());
  FeedbackBuffers& slot = slot_for(so.step);
  side_waits_main();
  if (variant_ == Feedback::single_payload) {
    bcast_.broadcast(slot.payload.rows(0, n), pp_ - 1, side_, label("feedback.payload", so.step));
  } else {
    bcast_.broadcast(slot.sampled.rows(0, n), pp_ - 1, side_, label("feedback.sampled", so.step));
    // counts is [2, N]: a view of its first 2N elements, as torch.stack would produce.
    bcast_.broadcast(counts_view(slot, n), pp_ - 1, side_, label("feedback.counts", so.step));
    if (relays_drafts()) bcast_.broadcast(slot.drafts.rows(0, n), pp_ - 1, side_, label("feedback.drafts", so.step));
  }
  dev_.record(slot.done, side_);
  slot.recorded = true;
  Pending p{so.step, &slot, {}, {}, *mask, {}};
  for (const ScheduledRequest& r : so.requests) {
    p.idx.push_back(r.idx);
    p.ids.push_back(r.id);
    p.gen_at_receive.push_back(gen_[static_cast<size_t>(r.idx)]);
  }
  queue_.back() = std::move(p);
}

// `lookahead_past_ring` (vLLM #53402): with pp + 1 batches in flight a receiver runs
// execute_model(T + 1) before sample_tokens(T); receive() then posts from the batch it holds, T + 1's,
// into T + 1's entry of the ring, and T's entry stays empty. From the first step with feedback on,
// each receiver posts at sample_tokens(T) what the last stage sends at T + 1: its receives are one
// step behind. ppspec's worker runs both halves of a step together, so the shift is modelled by
// its effect: the first serving step's receives are never posted, and every later step's are.
bool PPHandler::falls_behind() {
  if (!lookahead_past_ring_ || !serving_ || behind_) return false;
  behind_ = true;
  return true;
}

std::optional<PrevOutputs> PPHandler::get_prev_sampled_outputs() {
  if (queue_.empty()) return std::nullopt;
  std::optional<Pending> p = std::move(queue_.front());
  queue_.pop_front();
  if (!p) return std::nullopt;
  // Wait before any early return: the buffers are reused only after this point. A slot whose mask
  // is all false (the feedback_for_nonfinal_chunks fault) is waited for too, and adopts nothing.
  dev_.stream_wait(main_, p->slot->done);
  PrevOutputs out;
  out.step = p->step;
  out.slot = p->slot;
  out.rows = static_cast<int32_t>(p->idx.size());
  out.has_drafts = relays_drafts();
  bool any = false;
  for (size_t i = 0; i < p->idx.size(); ++i) {
    const bool freed = gen_[static_cast<size_t>(p->idx[i])] != p->gen_at_receive[i];
    const bool keep = p->mask[i] && !freed;
    out.idx_mapping.push_back(keep ? p->idx[i] : -1);
    out.req_ids.push_back(p->ids[i]);
    any = any || keep;
  }
  if (!any) return std::nullopt;
  return out;
}

void PPHandler::reset() {
  if (is_last()) return;
  for (auto& p : queue_)
    if (p) dev_.event_sync(p->slot->done);
  queue_.clear();
  for (int i = 0; i < pp_; ++i) queue_.emplace_back(std::nullopt);
}

FeedbackBuffers& PPHandler::last_stage_slot(int64_t step) {
  FeedbackBuffers& slot = slot_for(step);
  // The slot's broadcast of pp+1 steps ago must be done before the sampler overwrites it.
  if (slot.recorded) dev_.stream_wait(main_, slot.done);
  return slot;
}

void PPHandler::broadcast(const SchedulerOutput& so, FeedbackBuffers& slot, bool plain_sampler_step) {
  if (disabled_) return;
  const auto mask = posted_mask(so);
  publish_gate(so, mask);
  if (variant_ == Feedback::single_payload) return;  // the payload goes after propose()
  if (!mask) return;
  const auto n = static_cast<int64_t>(so.requests.size());
  side_waits_main();
  // vLLM pads a plain-sampler step's [N, 1] to [N, K+1]; the fault sends it narrow (#46994).
  const int64_t width = narrow_width_ && plain_sampler_step ? 1 : k_ + 1;
  core::Buffer sampled(slot.sampled.data(), slot.sampled.shadow(), core::Dtype::i64, core::Shape{n, width});
  bcast_.broadcast(sampled, pp_ - 1, side_, label("feedback.sampled", so.step));
  bcast_.broadcast(counts_view(slot, n), pp_ - 1, side_, label("feedback.counts", so.step));
  dev_.record(slot.done, side_);
  slot.recorded = true;
}

void PPHandler::broadcast_drafts(const SchedulerOutput& so, FeedbackBuffers& slot) {
  if (disabled_ || !posted_mask(so)) return;
  const auto n = static_cast<int64_t>(so.requests.size());
  side_waits_main();
  if (variant_ == Feedback::single_payload) {
    bcast_.broadcast(slot.payload.rows(0, n), pp_ - 1, side_, label("feedback.payload", so.step));
  } else {
    if (!relays_drafts()) return;
    bcast_.broadcast(slot.drafts.rows(0, n), pp_ - 1, side_, label("feedback.drafts", so.step));
  }
  dev_.record(slot.done, side_);
  slot.recorded = true;
}

}  // namespace ppspec::engine
