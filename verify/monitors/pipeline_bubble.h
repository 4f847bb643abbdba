// Pipeline bubble: a step in which a rank posts, and so waits for, feedback that no request of the
// step needs is a finding — decided from what the step needed, not from a timing threshold.
//
// vLLM #38726: with PP, chunked prefill and async scheduling, the last stage broadcast the sampled
// tokens of every step to the earlier stages, also of a step whose requests are all non-final
// prefill chunks (their samples are discarded). The earlier stages wait for that collective, so
// they start the next chunk only once the previous one has traversed every stage: chunked prefill
// degenerates to one chunk in flight. The fix skips the collective on both sides when every
// scheduled request is a non-final chunk (this engine's gate, need_sampled_mask, is that fix).
//
// The evidence is behaviour: the operations posted on a feedback communicator (op_posted, labelled
// with their step) and what the engine core scheduled for that step (batch_scheduled and each
// row's request_scheduled: a row produces a sample iff its computed and scheduled tokens reach its
// prefill length). A post for a step none of whose rows produces a sample — all non-final chunks,
// or no rows at all — is a bubble. Every schedule posts the same operations, so the finding is a
// property of the program, the same under every seed and policy.
//
// The other half of a bubble, "a rank idle while its next step's work is ready", is not judged
// here: a stream's wait on an event (cudaStreamWaitEvent) is published by neither runtime, so a
// trace does not show that a main stream depends on the feedback receive; and whether that wait
// left the stream idle is when the receive completed against when the stream reached the wait, a
// comparison of times that differs with the schedule and the jitter. The post that this monitor
// names is the cause of any such wait, and it is visible in every schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class PipelineBubble final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::batch_scheduled, core::EventKind::request_scheduled, core::EventKind::op_posted});
  }

 private:
  // A row of a step as the engine core scheduled it.
  struct Row {
    int64_t req = -1;
    int64_t num_computed = 0;
    int64_t num_scheduled = 0;
    int64_t prefill_len = 0;
  };
  // What a step needed: its rows, and whether any of them produces a sample.
  struct Needs {
    size_t rows = 0;             // the batch's requests (batch_scheduled)
    std::vector<Row> scheduled;  // their request_scheduled probes, as they arrive
    bool samples = false;
  };

  void on_batch(const core::Event& e);
  void on_request(const core::Event& e);
  void on_posted(const core::Event& e);
  void report_bubble(const core::Event& e, int64_t step, const Needs& n);

  std::map<int64_t, Needs> steps_;  // by engine step; the oldest forgotten (kept_steps)
};

}  // namespace ppspec::verify
