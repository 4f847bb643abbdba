// The engine paths a serving run reached: the mechanisms where bugs of pipeline-parallel
// speculative decoding live (preemption, aborts, chunked prompts, steps scheduled ahead, prefix
// hits, dummy batches, EAGLE taps relayed, recurrent rollbacks, module loads after warmup, KV pulled
// from a prefill instance), counted
// from what the run did (its events and its requests' records), never from its configuration. A
// pass says what it reached; a mechanism the deployment enables and the run never exercised is
// said as a warning (`unexercised`).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/event.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/request_record.h"

namespace ppspec::serving {

struct PathsReached {
  int64_t chunked_prompts = 0;    // prompts prefilled over several steps
  int64_t preemptions = 0;        // requests preempted (each time), then resumed by recomputation
  int64_t preempted_in_step = 0;  // ... while the step being scheduled already held the request's row
  int64_t aborts = 0;             // aborts that reached the engine core
  int64_t aborts_in_flight = 0;   // ... while a step of the request was in flight
  int64_t stop_token_ends = 0;    // requests ended by the stop token
  int64_t stop_string_ends = 0;   // requests the front end ended on a stop string
  int64_t stop_string_trims = 0;  // ... dropping tokens the engine core sampled after it in the same step
  int64_t length_cap_ends = 0;    // requests ended at max_model_len
  int64_t greedy_requests = 0;    // requests sampled greedily (checked token by token by the golden oracle)
  int64_t drafts_verified = 0;
  int64_t steps_ahead = 0;                // request steps scheduled while the request's previous step was in flight
  int64_t prefix_hit_blocks = 0;          // KV blocks reused from the prefix cache
  int64_t padding_writes = 0;             // kernel writes of a CUDA graph's padding rows
  int64_t slot_reuse = 0;                 // request-state rows taken over by another request
  int64_t dummy_batches = 0;              // dp > 1: steps a replica ran as a dummy batch
  int64_t taps_relayed = 0;               // EAGLE taps sent to a later stage
  int64_t recurrent_rollbacks = 0;        // requests whose recurrent state rolled back past rejected drafts
  int64_t module_loads_after_warmup = 0;  // kernel modules loaded while serving
  int64_t kv_pulls = 0;                   // disaggregation: requests whose prompt KV the decode instance pulled
  int64_t mla_decode_requests = 0;        // TRITON_MLA: requests rank 0 sent down the decode path (step by step)

  friend bool operator==(const PathsReached&, const PathsReached&) = default;
};

// The paths' names and fields, in the order reports and `--json` list them.
struct PathField {
  const char* name;
  int64_t PathsReached::*field;
};
const std::vector<PathField>& path_fields();

// Counts what the events show (chunks, padding writes, slot reuse, taps, module loads).
class PathsSink final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;
  PathsReached reached() const { return reached_; }

 private:
  PathsReached reached_;
  // The engine cores by actor (one per replica), numbered as first seen: looked up without a copy.
  std::map<std::string, int, std::less<>> cores_;
  // Request-state row (of the replica whose engine core scheduled it) -> its latest request.
  std::map<std::pair<int, int64_t>, int64_t> owner_;
  std::set<std::pair<int, int64_t>> chunked_;  // requests prefilled over several steps
  std::map<core::RankId, core::WarmupPhase> phase_;
};

// The events' counts, completed from the run's statistics and its requests' records.
PathsReached paths_reached(const PathsReached& from_events, const engine::EngineConfig& cfg,
                           const engine::ServingStats& stats, const std::vector<engine::RequestRecord>& requests);

// The mechanisms `cfg` enables that a run reaching `p` never exercised, each in a sentence.
std::vector<std::string> unexercised(const engine::EngineConfig& cfg, const PathsReached& p);

}  // namespace ppspec::serving
