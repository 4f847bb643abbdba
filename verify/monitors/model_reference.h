// The model reference (`output-divergence`): at every engine step, warmup included, every rank's
// activations and the last stage's greedy samples are those of the reference model
// (verify/oracles/golden.h) over the tokens stage 0 embedded for the request, checked as each is published:
//  * `stage-output`: per request row, the context lane and a digest of the rank's deep lanes after
//    its stage's last layer (the `stage_output` probe) equal the model's at that position;
//  * `greedy-sample`: a greedy request's sampled tokens are the model's argmax at each logit row,
//    the drafts (as the last stage embedded them) accepted while they equal it.
// The reference follows what stage 0 embedded, not what it should have: whether the embedded
// positions and tokens are right is stage agreement's and draft freshness's to say. So a finding
// here is a computation that went wrong (a KV slot, a block table, a layer, the head or the
// sampler), named at its first step, rank and stage, while the tokens are still right; the golden
// oracle would see only the output, after the run. A stage is blamed when the stage before it
// agreed at that step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "verify/oracles/golden.h"
#include "core/probes.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class ModelReference final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::request_scheduled, core::EventKind::inputs_built, core::EventKind::stage_output,
                     core::EventKind::tokens_sampled});
  }

  // Requests modelled at once; the one embedded longest ago is forgotten first. A request no stage
  // 0 rank embedded for kStepsIdle steps has finished (a running one is scheduled every pp steps or
  // waits behind a few chunked prefills) and is forgotten: its state grows with its length. One
  // forgotten too early is not checked any more, never reported.
  static constexpr size_t kRequestsKept = 1024;
  static constexpr int64_t kStepsIdle = 256;
  static constexpr size_t kStepsScheduledKept = 8;  // a request's schedules not yet embedded, at most

  // How much it checked: stage_output rows compared with the model, greedy samples compared.
  uint64_t rows_checked() const { return rows_checked_; }
  uint64_t samples_checked() const { return samples_checked_; }
  // Requests modelled, and those it stopped checking (the run record shows them: no silent stop).
  uint64_t requests_followed() const { return requests_followed_; }
  uint64_t requests_unfollowable() const { return requests_unfollowable_; }
  uint64_t requests_forgotten_idle() const { return requests_forgotten_idle_; }
  uint64_t requests_forgotten_for_room() const { return requests_forgotten_for_room_; }

 private:
  struct Request {
    std::unique_ptr<ReferenceSequence> sequence;
    int64_t prompt_len = -1;
    // The prefill length each scheduled step ran under, until stage 0 embeds it: with a lookahead
    // batch the engine core may preempt and resume the request (a longer prefill) before the last
    // stage has sampled an earlier step. `block_prefill` is the embedded step's.
    std::map<int64_t, int64_t> prefill_by_step;
    int64_t block_prefill = -1;
    bool followed = true;  // false once stage 0 embedded what the model cannot follow
    // Stage 0's block at `embedded_step`: the first position and the ids (bonus token, drafts).
    int64_t embedded_step = -1;
    int64_t first_position = -1;
    std::vector<int64_t> ids;
    // The last stage's ids at `last_ids_step` (its drafts decide acceptance).
    int64_t last_ids_step = -1;
    std::vector<int64_t> last_ids;
    // The ranks whose rows agreed with the model at `embedded_step`.
    std::vector<bool> agreed;
    int64_t sampled_step = -1;
  };
  bool enabled() const { return facts_.checkpoint != nullptr && facts_.model != nullptr; }
  void on_scheduled(const core::Event& e, const core::RequestScheduledProbe& p);
  void on_inputs(const core::Event& e, const core::InputsBuiltProbe& p);
  void follow(Request& r, const core::Event& e, const core::InputsBuiltProbe& p);
  void start_after_hit(Request& r, const core::RequestScheduledProbe& p);
  void check_output(const core::Event& e, const core::StageOutputProbe& p);
  void report_output(const core::Event& e, const core::StageOutputProbe& p, Request& r, size_t row, uint32_t context,
                     uint64_t digest);
  void check_sampled(const core::Event& e, const core::TokensSampledProbe& p);
  std::vector<int64_t> expected_samples(Request& r) const;
  std::string stage_hint(const Request& r, core::RankId rank) const;
  void forget_oldest();

  std::map<int64_t, Request> requests_;  // by request id (warmup's synthetic ones are negative)
  int64_t pruned_at_step_ = -1;
  uint64_t rows_checked_ = 0;
  uint64_t samples_checked_ = 0;
  uint64_t requests_followed_ = 0;
  uint64_t requests_unfollowable_ = 0;
  uint64_t requests_forgotten_idle_ = 0;
  uint64_t requests_forgotten_for_room_ = 0;
};

}  // namespace ppspec::verify
