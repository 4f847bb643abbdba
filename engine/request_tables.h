// A rank's per-request state (vLLM RequestState), by req-state index: what the step's inputs are
// built from and what post_update writes back. Filled from the scheduler's new requests and blocks.
#pragma once

#include <array>

#include "engine/input_staging.h"
#include "engine/messages.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class RequestTables {
 public:
  RequestTables(RankContext& ctx, InputStaging& staging);
  // New requests (a reused slot must not verify the previous request's drafts) and new blocks
  // (vLLM's _update_states). With pin_memory the new blocks are only written into the pinned
  // block table here; `commit` copies it.
  void admit(const SchedulerOutput& so);
  // With pin_memory, vLLM's commit_block_table in _prepare_inputs: the pinned block table's rows up
  // to the batch's last request slot, copied to the device.
  void commit(const SchedulerOutput& so);

  core::Buffer last_sampled;  // [max_reqs] i64
  core::Buffer draft_tokens;  // [max_reqs, max(K, 1)] i64
  core::Buffer num_computed;  // [max_reqs] i32
  core::Buffer prefill_len;   // [max_reqs] i32
  core::Buffer total_len;     // [max_reqs] i32
  core::Buffer output_base;   // [max_reqs] i32: output tokens it had when admitted (resumed: all so far)
  core::Buffer prompt;        // [max_reqs, max_prompt] i32
  core::Buffer block_table;   // [max_reqs, max_blocks] i32
  core::Buffer seeds;         // [max_reqs] i64
  core::Buffer spread;        // [max_reqs] u32
  core::Buffer temperature;   // [max_reqs] f32

 private:
  RankContext& ctx_;
  InputStaging& staging_;
  // The pinned twins (InputStaging::twin), in the order of the device buffers above.
  enum Table : uint8_t {
    kLastSampled,
    kDraftTokens,
    kNumComputed,
    kPrefillLen,
    kTotalLen,
    kOutputBase,
    kPrompt,
    kBlockTable,
    kSeeds,
    kSpread,
    kTemperature,
    kTables
  };
  std::array<core::Buffer, kTables> host_;
};

}  // namespace ppspec::engine
