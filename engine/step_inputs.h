// A step's input rows (vLLM InputBuffers): the batch's mapping to request slots, then the rows
// prepare_inputs builds from this rank's request tables, padded to the graph's size (R10), with the
// probes of what the kernel stored (inputs_built, padding_rows).
#pragma once

#include "engine/messages.h"
#include "engine/rank_context.h"
#include "engine/request_tables.h"
#include "engine/write_check.h"
#include "kernels/toy_model.h"

namespace ppspec::engine {

class StepInputs {
 public:
  explicit StepInputs(RankContext& ctx);
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

 private:
  void probe_rows(const SchedulerOutput& so, int32_t padded_rows, const WriteCheck& check);

  RankContext& ctx_;
};

}  // namespace ppspec::engine
