// The engine core's scheduler (vLLM's, reduced): continuous batching under a token budget and a
// sequence limit, chunked prefill, async scheduling with a batch queue of depth pp (a request in an
// in-flight batch is not scheduled again, so a decoding request runs every pp steps), draft
// placeholders (it knows draft counts, never draft ids), paged KV blocks, requests finishing at
// max tokens, a stop token, or an abort.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/config.h"
#include "engine/messages.h"
#include "engine/workload.h"

namespace ppspec::engine {

struct RequestRecord {
  RequestSpec spec;
  int32_t idx = -1;
  int32_t num_computed = 0;
  std::vector<int32_t> blocks;
  std::vector<int64_t> output;
  std::vector<int64_t> output_step;     // the engine step that sampled each output token ...
  std::vector<core::Time> output_time;  // ... and when its samples reached the host
  // The drafts verified at each decode step of this request (and that step's engine step), for
  // the PP-invariance oracle.
  std::vector<std::vector<int64_t>> verified_drafts;
  std::vector<int64_t> verified_step;
  int64_t accepted_drafts = 0;
  int64_t proposed_drafts = 0;
  int decode_steps = 0;
  int64_t last_step = -(int64_t{1} << 40);  // the step it was last scheduled in
  bool admitted = false;
  bool in_flight = false;
  bool finished = false;
  bool aborted = false;
  bool dummy = false;
  int prefill_len() const { return static_cast<int>(spec.prompt.size()); }
};

class Scheduler {
 public:
  Scheduler(const EngineConfig& cfg, std::vector<RequestSpec> workload);

  void admit_until(core::Time now);
  std::optional<core::Time> next_arrival() const;
  bool done() const;  // every workload request finished

  // The next step's batch; an idle batch (no requests) when requests are running but none may run
  // yet (the PP cadence: a request runs at most once every pp steps, so that step T's feedback is
  // adopted at T+pp, before the request's next step); null when nothing is running at all.
  std::shared_ptr<SchedulerOutput> schedule(int64_t step);
  void update(const SchedulerOutput& so, const ModelOutput& out);

  // Warmup: synthetic requests, scheduled like any other, finished before serving. A dummy that
  // reaches its max tokens finishes like any request; warmup then adds fresh ones. Their ids are
  // -2, -3, ...: never a workload id, and never -1, which events use for "no request".
  void add_dummies(int n, int prompt_len, int max_tokens);
  bool dummies_live() const;
  void finish_dummies();

  const std::vector<RequestRecord>& records() const { return records_; }
  int steps_with_output() const { return steps_with_output_; }

 private:
  bool allocate_blocks(RequestRecord& r, int upto_tokens, std::vector<int32_t>& fresh);
  void finish(RequestRecord& r, bool aborted);
  void abort_in_flight();  // WorkloadConfig::abort_in_flight

  static constexpr size_t kNoOwner = SIZE_MAX;
  const EngineConfig cfg_;  // a copy: a scheduler outlives the expressions that configure it
  std::vector<RequestRecord> records_;  // workload requests first, then warmup dummies
  size_t next_arrival_ = 0;             // index into the workload, in arrival order
  std::deque<size_t> running_;          // admitted, holding a req-state index, in admission order
  std::deque<size_t> waiting_;          // arrived, not yet admitted
  std::vector<int32_t> free_idx_;       // req-state indices, lowest first
  std::vector<size_t> slot_owner_;      // req-state index -> its running record (kNoOwner when free)
  std::vector<int32_t> free_blocks_;    // KV blocks (block 0 is the null block)
  std::vector<int32_t> finished_idx_;   // to report in the next step
  int workload_size_ = 0;
  int dummies_added_ = 0;
  int finished_count_ = 0;
  int steps_with_output_ = 0;
};

// The KV blocks a rank needs for a workload; checked against the model's num_blocks.
int blocks_needed(const EngineConfig& cfg);

}  // namespace ppspec::engine
