// What the engine core keeps of each request, and what a serving run publishes of it: its spec,
// its output with the step and time of every token, the drafts verified at each decode step, and
// its counters. The oracles and reports read a run through these records (verify/, report/); the
// scheduler keeps its own working fields beside them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"
#include "engine/workload.h"

namespace ppspec::engine {

// A disaggregated decode instance's request: its prompt's KV is on the prefill instance until
// pulled (engine/disaggregation.h).
enum class RemoteKv : uint8_t {
  none,      // not a remote prefill (or the prefill instance's own request)
  waiting,   // computed by the prefill instance; no blocks here yet
  loading,   // blocks allocated, the pulls posted (vLLM's WAITING_FOR_REMOTE_KVS)
  loaded,    // every rank's pulls completed: it may be admitted, from its prompt's last token
  admitted,  // admitted with the pulled KV (a later resumption recomputes like any other)
};

struct RequestRecord {
  RequestSpec spec;
  RemoteKv remote = RemoteKv::none;
  std::vector<int32_t> remote_blocks;  // the blocks the prefill instance exported
  int32_t idx = -1;
  int32_t num_computed = 0;
  int32_t prefill_tokens = 0;  // what its prefill computes: the prompt, or prompt + output once resumed
  std::vector<int32_t> blocks;
  // Prefix caching: the chained hashes of its full blocks as far as its tokens are known (kept
  // over a preemption, as vLLM's request.block_hashes), and how many leading blocks of its table
  // are in the cache (hit, or cached once computed).
  std::vector<uint64_t> block_hashes;
  int32_t cached_blocks = 0;
  int64_t prefix_hit_blocks = 0;  // blocks it reused, over all its admissions
  std::vector<int64_t> output;
  std::vector<int64_t> output_step;     // the engine step that sampled each output token ...
  std::vector<core::Time> output_time;  // ... and when its samples reached the host
  // The drafts verified at each decode step of this request (that step's engine step, and the
  // position of the first draft), for the PP-invariance oracle.
  std::vector<std::vector<int64_t>> verified_drafts;
  std::vector<int64_t> verified_step;
  std::vector<int64_t> verified_position;
  int64_t accepted_drafts = 0;
  int64_t proposed_drafts = 0;
  int32_t drafts_next = -1;  // adaptive budget: the drafts its last sampling step proposed (-1: K)
  int decode_steps = 0;
  int preemptions = 0;
  int preempted_in_step = 0;        // preemptions that took its row out of the step being scheduled (vLLM #28558)
  int steps_ahead = 0;              // steps scheduled while its previous step was in flight (the lookahead batch)
  int64_t first_preempted_at = -1;  // its output length when it was first preempted (-1: never)
  int64_t last_step = -(int64_t{1} << 40);  // the step it was last scheduled in
  int64_t admitted_step = -1;               // the step that admitted (or resumed) it last
  // Its steps whose outputs have not returned, oldest first (at most two: pp + 1 batches in flight
  // and a step every pp), and the tokens they scheduled, not yet in num_computed.
  std::vector<int64_t> steps_in_flight;
  int32_t tokens_in_flight = 0;
  // Under partial_prefill_stays_in_flight: a returned non-final prefill chunk's in-flight mark that
  // its return did not clear (tt-xla's scheduled_req_ids): the schedule passes the request over.
  bool stale_in_flight_mark = false;
  bool admitted = false;
  bool finished = false;
  bool aborted = false;
  bool abort_arrived = false;
  bool dummy = false;
  // The front end's view (engine/stop_strings.h), where the workload has stop strings: its output
  // text so far, the stop string that ended it (-1: none) and how many of `output` it returned
  // (-1: all of them; the engine core may have sampled past a stop string in the same step).
  std::string text;
  int32_t stop_string = -1;
  int32_t returned_tokens = -1;
  // The output the client received.
  std::span<const int64_t> returned() const {
    return returned_tokens < 0 ? std::span<const int64_t>(output)
                               : std::span<const int64_t>(output).first(static_cast<size_t>(returned_tokens));
  }
  int prefill_len() const { return prefill_tokens; }
  bool in_flight() const { return !steps_in_flight.empty(); }
  // What the engine core counts as computed when it schedules: every token of its steps in flight.
  int32_t computed_if_accepted() const { return num_computed + tokens_in_flight; }
  // Its whole prefill is computed or scheduled: its next step decodes, and its step in flight, if
  // any, samples (a prefill chunk that leaves tokens of the prefill samples nothing).
  bool prefill_scheduled() const { return computed_if_accepted() >= prefill_len(); }
  // Its tokens as the engine core knows them: the prompt, then its output.
  int known_tokens() const { return static_cast<int>(spec.prompt.size() + output.size()); }
  int32_t token_at(int pos) const;
};

}  // namespace ppspec::engine
