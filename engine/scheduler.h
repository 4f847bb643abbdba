// The engine core's scheduler (vLLM's V1 scheduler, reduced): continuous batching under a token
// budget and a sequence limit, chunked prefill, async scheduling with a batch queue of depth pp or
// pp + 1 (a decoding request runs every pp steps; at depth pp its previous step has returned by
// then, at pp + 1 it may still be in flight: the request is scheduled ahead with that step's drafts
// counted as accepted, vLLM's placeholders, and the count is corrected when the step returns),
// draft placeholders (it knows draft counts, never draft ids), paged KV blocks with K
// lookahead slots for the drafter's queries, preemption by recompute when a running request
// cannot get the blocks its step needs, requests finishing at max tokens, a stop token, or an
// abort.
//
// What happens to the KV blocks of a request let go while one of its steps is in flight (vLLM
// #45357): they stay fenced, owned by nobody new, until that step's output returns; only then do
// they join the free pool. The step's kernels still store through them on the stages it has not
// reached yet.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/event_subjects.h"
#include "engine/block_pool.h"
#include "engine/config.h"
#include "engine/disaggregation.h"
#include "engine/messages.h"
#include "engine/request_record.h"
#include "engine/workload.h"

namespace ppspec::engine {

// What the scheduler did with KV blocks and request state, for the engine core to publish
// (core/probes.h: blocks_allocated, blocks_freed, request_released, abort_arrived, blocks_shared,
// blocks_cached).
struct LedgerEntry {
  enum class What : uint8_t { allocated, freed, released, abort_arrived, shared, cached };
  What what = What::allocated;
  int64_t req = -1;
  int64_t step = -1;
  core::Release reason = core::Release::none;
  int32_t state_index = -1;
  int32_t first_index = 0;
  std::vector<int32_t> blocks;
};

class Scheduler {
 public:
  Scheduler(const EngineConfig& cfg, std::vector<RequestSpec> workload);

  void admit_until(core::Time now);
  std::optional<core::Time> next_arrival() const;
  bool done() const;  // every workload request finished
  bool fenced() const { return !fences_.empty(); }
  // The waiting requests' ids, in queue order (FCFS: the next to admit first).
  std::vector<int64_t> waiting_ids() const;

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
  // Steps whose adaptive draft budget was below K (their requests drafted fewer than K).
  int steps_budget_below_k() const { return steps_budget_below_k_; }
  const BlockPool& pool() const { return pool_; }

  // ---- disaggregation (engine/disaggregation.h; engine/scheduler_remote.cc) ----
  // Prefill instance: the requests finished since the last call, with the blocks they export (a
  // finished request keeps its blocks until release_export: the transfer reads them).
  std::vector<KvExport> take_exports();
  void release_export(int64_t req, int64_t step);
  bool holds_exports() const { return !held_.empty(); }
  // Decode instance: a request the prefill instance computed arrives; the pulls the scheduler
  // started since the last call; a request whose every pull completed.
  void arrive_remote(const KvExport& e);
  std::vector<KvLoad> take_loads();
  void kv_loaded(int64_t req, int64_t step);
  // The aborts that reach requests whose KV is loading or loaded, not admitted yet
  // ([workload] abort_while_loading).
  void abort_remote(int64_t step);
  // What changed since the last call, in order.
  std::vector<LedgerEntry> take_ledger();

 private:
  struct Fence {
    int64_t step;  // the in-flight step that still stores through the blocks
    int64_t req;
    core::Release reason;
    std::vector<int32_t> blocks;
  };
  class StepBuilder;
  // A waiting request's prefix-cache hit (engine/scheduler_prefix.cc): the cached blocks its
  // prefill begins with, and the tokens it starts from.
  struct PrefixHit {
    std::vector<int32_t> blocks;
    int32_t computed = 0;
  };

  bool allocate_blocks(RequestRecord& r, int upto_tokens, int64_t step, std::vector<int32_t>& fresh);
  int missing_blocks(const RequestRecord& r, int upto_tokens) const;  // beyond those it holds
  int fenced_blocks() const;
  int32_t lookahead() const;
  void release(RequestRecord& r, core::Release reason, int64_t step);
  void finish(RequestRecord& r, bool aborted, int64_t step);
  // A client's abort reaches the engine core at `step` (recorded in the ledger) ...
  void abort_arrives(RequestRecord& r, int64_t step);
  // ... which lets go of the request there.
  void client_abort(RequestRecord& r, int64_t step);
  // The front end's update with the step's new tokens (engine/stop_strings.h): whether a stop
  // string ended the request.
  bool front_end_stops(RequestRecord& r, int32_t new_tokens);
  void preempt(RequestRecord& r, int64_t step);
  void free_blocks(int64_t req, int64_t step, core::Release reason, std::vector<int32_t> blocks);
  void return_fenced(int64_t step);
  void abort_in_flight(int64_t step);  // WorkloadConfig::abort_in_flight
  bool abort_scan_reaches(const RequestRecord& r, int64_t step) const;
  bool eligible(const RequestRecord& r, int64_t step) const;
  int running_tokens(const RequestRecord& r, int budget) const;
  void enqueue(size_t i, bool preempted);
  static bool runs_after(const RequestRecord& a, const RequestRecord& b);
  size_t victim() const;
  void land(RequestRecord& r, int64_t step, int32_t tokens);
  RequestRecord* owner_of_row(int64_t step, const ScheduledRequest& s);
  size_t index_of(const RequestRecord& r) const { return static_cast<size_t>(&r - records_.data()); }
  void admit_waiting(StepBuilder& b);
  // A remote request's first pass through admission: its prompt's blocks, and the pull posted.
  bool start_load(RequestRecord& r, int64_t step);
  // Its row: the workers' block table gets the pulled blocks too (the row's new blocks from column 0).
  void admitted_pulled(RequestRecord& r, ScheduledRequest& row);
  // A pull that held a request slot ended (admitted, or its request aborted).
  void end_pull();
  void hold_for_export(RequestRecord& r, std::vector<int32_t>& blocks);
  // Prefix caching (engine/scheduler_prefix.cc); nothing happens without it.
  PrefixHit prefix_hit(RequestRecord& r);
  bool hit_fits(const RequestRecord& r, const PrefixHit& hit, int tokens) const;
  void take_hit(RequestRecord& r, const PrefixHit& hit, int64_t step);
  void admitted_with_hit(RequestRecord& r, const PrefixHit& hit, ScheduledRequest& row, int64_t step);
  void cache_rows(const SchedulerOutput& so);
  void cache_full_blocks(RequestRecord& r, int upto_tokens, int64_t step);
  void hash_blocks(RequestRecord& r, int n);

  static constexpr size_t kNoOwner = SIZE_MAX;
  const EngineConfig cfg_;              // a copy: a scheduler outlives the expressions that configure it
  std::vector<RequestRecord> records_;  // workload requests first, then warmup dummies
  size_t next_arrival_ = 0;             // index into the workload, in arrival order
  std::deque<size_t> running_;          // admitted, holding a req-state index, in admission order
  std::deque<size_t> waiting_;          // arrived (or preempted), not yet (re)admitted
  std::vector<int32_t> free_idx_;       // req-state indices, lowest first
  std::vector<size_t> slot_owner_;      // req-state index -> its running record (kNoOwner when free)
  BlockPool pool_;                      // KV blocks (block 0 is the null block)
  std::vector<Fence> fences_;           // blocks of released requests, until their step returns
  std::vector<int32_t> finished_idx_;   // to report in the next step
  std::vector<LedgerEntry> ledger_;
  // Disaggregation: exports not yet taken, blocks held for a transfer after their request ended
  // (by request id: the prefill side's exports until every send completed, the decode side's
  // aborted loads until every pull did), pulls not yet taken. Each bounded by the workload: a
  // request exports, holds and loads once.
  std::vector<KvExport> exports_;
  std::map<int64_t, std::vector<int32_t>> held_;
  std::vector<KvLoad> loads_;
  size_t pulls_waiting_ = 0;  // requests with pulled (or pulling) blocks, not admitted yet
  int workload_size_ = 0;
  int dummies_added_ = 0;
  int finished_count_ = 0;
  int steps_with_output_ = 0;
  int steps_budget_below_k_ = 0;
};

// The KV blocks a rank needs so that no request is ever preempted; `[model] num_blocks` below it
// makes the scheduler preempt.
int blocks_needed(const EngineConfig& cfg);
// The fewest a workload can run with: the null block and one request at its longest.
int blocks_minimum(const EngineConfig& cfg);

}  // namespace ppspec::engine
