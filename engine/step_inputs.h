// A step's input rows (vLLM InputBuffers): the batch's mapping to request slots, then the rows
// prepare_inputs builds from this rank's request tables, padded to the graph's size (R10), with the
// probes of what the kernel stored (inputs_built, padding_rows).
#pragma once

#include "engine/attention_groups.h"
#include "engine/input_staging.h"
#include "engine/messages.h"
#include "engine/rank_context.h"
#include "engine/request_tables.h"
#include "engine/write_check.h"
#include "kernels/toy_model.h"

namespace ppspec::engine {

class StepInputs {
 public:
  StepInputs(RankContext& ctx, InputStaging& staging);
  // After the checkpoint's load (device memory starts as poison): no step's split yet.
  void clear_split();
  // query_start_loc, idx_mapping and query_len of the batch.
  void upload_batch(const SchedulerOutput& so);
  // prepare_inputs over the batch and its padding rows [num_tokens, padded_rows).
  void prepare(const SchedulerOutput& so, int32_t padded_rows, const RequestTables& tables, WriteCheck& check);
  // What the model's row kernels read.
  kernels::RowInputs row_inputs(const RequestTables& tables) const;

  core::Buffer input_ids;    // [max_rows] i32
  core::Buffer positions;    // [max_rows] i64
  core::Buffer slots;        // [max_rows] i64
  core::Buffer is_padding;   // [max_rows] u8
  core::Buffer row_req;      // [max_rows] i32
  core::Buffer query_start;  // [max_reqs + 1] i32
  core::Buffer idx_mapping;  // [max_reqs] i32
  core::Buffer query_len;    // [max_reqs] i32
  // TRITON_MLA only (engine/attention_groups.h): the step's split of the batch
  // (kernels/mla_attention.h) and its requests' sequence lengths.
  core::Buffer attention_split;  // [2] i32
  core::Buffer seq_lens;         // [max_reqs] i32
  // The target group's reorder threshold; 0: the backend does not split.
  int reorder_threshold() const { return group_.reorder_threshold; }

 private:
  void probe_rows(const SchedulerOutput& so, int32_t padded_rows, const WriteCheck& check);
  // The attention metadata's split of the batch, uploaded and told (attention_split).
  void upload_split(const SchedulerOutput& so);

  RankContext& ctx_;
  InputStaging& staging_;
  // The pinned twins of query_start, idx_mapping, query_len and attention_split.
  core::Buffer query_start_cpu_, idx_mapping_cpu_, query_len_cpu_, attention_split_cpu_;
  TargetKvGroup group_;
};

}  // namespace ppspec::engine
