// What the engine core and the workers say to each other over host channels (vLLM's
// SchedulerOutput and ModelRunnerOutput, reduced to what the toy model needs).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"

namespace ppspec::engine {

struct NewRequest {
  int32_t idx = -1;  // req-state index (the row of every per-request table)
  int64_t id = -1;
  std::vector<int32_t> prompt;  // a resumed request's: its prompt and its output so far
  int32_t num_output = 0;       // output tokens it has (resumed after a preemption: all so far)
  int32_t num_computed = 0;     // tokens it starts with: its prefix-cache hit (0: none)
  int64_t seed = 0;
  uint32_t spread = 0;
};

struct ScheduledRequest {
  int32_t idx = -1;
  int64_t id = -1;
  // The engine core's count: exact when the request's previous step has returned; with a step of
  // it still in flight (async scheduling's lookahead), that step's drafts count as accepted (vLLM's
  // placeholders): the workers take the exact count from their own tables.
  int32_t num_computed = 0;
  int32_t num_tokens = 0;  // scheduled this step (1 + drafts for a decode row)
  int32_t prefill_len = 0;
  int32_t first_new_block = 0;
  std::vector<int32_t> new_blocks;
  bool decode() const { return num_computed >= prefill_len; }
  // vLLM compute_need_sampled_mask: does this row produce a sample this step?
  bool produces_sample() const { return num_computed + num_tokens >= prefill_len; }
};

struct SchedulerOutput {
  int64_t step = 0;
  bool dummy = false;  // a synthetic warmup step: the drafter does not run (vLLM _dummy_run)
  std::vector<NewRequest> new_requests;
  std::vector<int32_t> finished;           // req-state indices freed since the last step
  std::vector<ScheduledRequest> requests;  // decode rows first
  int32_t num_tokens = 0;
  // Data parallelism (engine/data_parallel.h): this replica has nothing to run this step while
  // another replica has rows, so it runs a dummy batch, through the forward and the drafter, that
  // posts the collectives the replicas share.
  bool dp_dummy = false;
  // Made by the engine core for a replica whose scheduler had no step while another's had one: no
  // scheduler waits for its output.
  bool synthesized = false;
};

enum class Command : uint8_t {
  step,
  disable_feedback,
  enable_feedback,
  preload,
  warmup_decode_update,
  reset_feedback,
  capture,
  serve,  // warmup is over: feedback on; from here no kernel may load (DESIGN §6.3)
  shutdown,
};

struct WorkerCommand {
  Command command = Command::step;
  std::shared_ptr<const SchedulerOutput> step;
};

struct RowOutput {
  int32_t idx = -1;
  int64_t id = -1;
  int32_t num_sampled = 0;
  int32_t num_rejected = 0;
  std::vector<int64_t> tokens;           // sampled this step
  std::vector<int64_t> drafts_verified;  // the drafts this step's input carried
  std::vector<int64_t> drafts_proposed;  // for the next step
};

struct ModelOutput {
  int64_t step = 0;
  core::Time time = 0;  // when the last stage had the step's samples on the host
  std::vector<RowOutput> rows;
  int32_t draft_budget = 0;  // the drafts per request this step proposed (adaptive budget; else K)
};

}  // namespace ppspec::engine
