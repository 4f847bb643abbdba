// The PP feedback path (vLLM `PPHandler`, DESIGN §6.2): the last stage broadcasts each step's
// sampling results (and the drafts it proposed) on a dedicated communicator from its side stream;
// every earlier stage posts the matching receives on its side stream at the same step, and adopts
// them pp steps later, at the start of the step that schedules those requests again.
//
// The gate (`need_sampled_mask`) decides from the scheduler output alone whether a step has
// feedback at all, so every rank posts the same sequence. A FIFO of depth pp holds the pending
// receives; generation counters skip rows whose request was freed since. Two wire formats:
// three messages (sampled [N,K+1] i64, counts [2,N] i32, drafts [N,K] i64) or a single payload
// [N, 2K+3] i64.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/runtime.h"
#include "engine/config.h"
#include "engine/messages.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

// The rows of a step that produce a sample; nullopt when none does (then nothing is posted).
std::optional<std::vector<bool>> need_sampled_mask(const SchedulerOutput& so);

struct FeedbackBuffers {
  core::Buffer sampled;    // [max_reqs, K+1] i64
  core::Buffer counts;     // [2, max_reqs] i32: num_sampled, then num_rejected
  core::Buffer drafts;     // [max_reqs, K] i64
  core::Buffer payload;    // [max_reqs, 2K+3] i64
  core::DeviceEvent done;  // recorded on the side stream after the slot's collectives
  bool recorded = false;
};

// The first 2N elements of `counts`: [num_sampled (N), num_rejected (N)], as the sampler packs them.
inline core::Buffer counts_view(const FeedbackBuffers& f, int64_t n) {
  return core::Buffer(f.counts.data(), f.counts.shadow(), core::Dtype::i32, core::Shape{2, n});
}

// What the deferred update of an earlier stage adopts.
struct PrevOutputs {
  int64_t step = -1;
  std::vector<int32_t> idx_mapping;  // per row: req-state index, or -1 to skip
  std::vector<int64_t> req_ids;
  FeedbackBuffers* slot = nullptr;
  int32_t rows = 0;
  bool has_drafts = false;
};

class PPHandler {
 public:
  // Its buffers are the rank's (RankContext::alloc): poisoned with the others when the rank starts.
  PPHandler(RankContext& ctx, core::Communicator& bcast);

  bool is_last() const { return stage_ == pp_ - 1; }
  void set_disabled(bool d) { disabled_ = d; }
  void start_serving() { serving_ = true; }
  bool disabled() const { return disabled_; }
  void on_req_idx_freed(int32_t idx) { ++gen_[static_cast<size_t>(idx)]; }

  // Earlier stages, at sample_tokens(T): post this step's receives.
  void receive(const SchedulerOutput& so);
  // Earlier stages, at the start of execute_model(T): the receives of step T-pp, if any. The main
  // stream waits for them before anything reads the buffers.
  std::optional<PrevOutputs> get_prev_sampled_outputs();
  // After the feedback warmup step: wait for and discard whatever is pending, re-seed the FIFO.
  void reset();

  // Last stage: the buffers a step's sampler writes (the main stream waits until the slot's
  // previous broadcast is done before reusing it).
  FeedbackBuffers& last_stage_slot(int64_t step);
  void broadcast(const SchedulerOutput& so, FeedbackBuffers& slot, bool plain_sampler_step);
  void broadcast_drafts(const SchedulerOutput& so, FeedbackBuffers& slot);
  bool relays_drafts() const { return k_ > 0 && !stale_drafts_; }
  // Whether the gate posts a step's feedback although none of its rows samples (only the
  // feedback_for_nonfinal_chunks fault does): the drafter proposed nothing, yet the drafts message
  // must go too, or the receivers' FIFO misaligns.
  bool posts_without_samples(const SchedulerOutput& so) const;

 private:
  core::Label label(const char* name, int64_t step) const { return core::Label{name, step}; }
  void side_waits_main();
  bool falls_behind();
  // The rows this rank posts a step's feedback for: need_sampled_mask, or under the
  // feedback_for_nonfinal_chunks fault an all-false mask for a step of non-final chunks only.
  std::optional<std::vector<bool>> posted_mask(const SchedulerOutput& so) const;
  // Tells the checkers what this rank's gate decided for a step (verify/monitors/gate_agreement.h).
  void publish_gate(const SchedulerOutput& so, const std::optional<std::vector<bool>>& mask);
  FeedbackBuffers& slot_for(int64_t step) {
    return slots_[static_cast<size_t>(step % static_cast<int64_t>(slots_.size()))];
  }

  core::Runtime& rt_;
  core::Device& dev_;
  core::Communicator& bcast_;
  int stage_;
  int pp_;
  int k_;
  Feedback variant_;
  bool stale_drafts_;
  bool narrow_width_;
  bool lookahead_past_ring_;
  bool nonfinal_feedback_;
  core::Stream main_;
  core::Stream side_;
  core::DeviceEvent main_ready_;
  bool disabled_ = false;
  bool serving_ = false;
  // `lookahead_past_ring`: whether this receiver is already one step behind.
  bool behind_ = false;
  std::vector<uint32_t> gen_;
  std::vector<FeedbackBuffers> slots_;  // a ring: one per step in flight

  struct Pending {
    int64_t step;
    FeedbackBuffers* slot;
    std::vector<int32_t> idx;
    std::vector<int64_t> ids;
    std::vector<bool> mask;
    std::vector<uint32_t> gen_at_receive;
  };
  std::deque<std::optional<Pending>> queue_;
};

}  // namespace ppspec::engine
