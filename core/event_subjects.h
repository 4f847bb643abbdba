// The typed subjects of the engine probes whose subject has a fixed vocabulary: a worker's phase,
// the kernel that wrote padding rows, the weight table bound, whether a step is a warmup step.
// Monitors switch on these; none matches text. A trace writes each as the event's "text" (the names
// below, unchanged since the fields were strings), so traces written before read back the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppspec::core {

// DESIGN §6.3: the order a worker goes through from start to serving.
enum class WarmupPhase : uint8_t {
  none,
  feedback_disabled,
  preload_registered_kernels,
  warmup_pp_decode_update,
  capture_graphs,
  feedback_enabled,
  serving,
};

// The kernels that store a CUDA graph's padding rows (verify/monitors/padding_checker.h says their fields).
enum class PaddingKernel : uint8_t { none, prepare_inputs, prepare_dflash_inputs, topk_softplus_sqrt };

// The weight tables whose binding is probed at their first use.
enum class WeightTable : uint8_t { none, draft_embed_tokens };

// Why the engine core let go of a request's state and KV blocks.
enum class Release : uint8_t { none, finished, aborted, preempted };

// Which stores a kv_slots probe shows: the target model's KV writes (every layer of the rank's
// stage stores through the same slot mapping), the drafter's context KV, or the drafter's query rows.
enum class KvWriter : uint8_t { none, target, draft_context, draft_query };

// What a segment of a disaggregated KV transfer carries (engine/disaggregation.h): the first
// stage's context lane, a target layer's lanes, or the drafter's KV on the last stage.
enum class KvPart : uint8_t { context, layer, draft };
std::string_view to_string(KvPart p);

// A scheduled batch: real requests, or a warmup step over synthetic ones.
enum class StepKind : uint8_t { serving, warmup };

// One probe's subject; its kind says which field holds.
struct ProbeSubject {
  WarmupPhase phase = WarmupPhase::none;               // warmup_phase
  PaddingKernel padding_kernel = PaddingKernel::none;  // padding_rows
  WeightTable table = WeightTable::none;               // table_bound
  StepKind step_kind = StepKind::serving;              // batch_scheduled
  Release release = Release::none;                     // blocks_freed, request_released
  KvWriter kv_writer = KvWriter::none;                 // kv_slots
};

std::string_view to_string(WarmupPhase p);
std::string_view to_string(PaddingKernel k);
std::string_view to_string(WeightTable t);
std::string_view to_string(StepKind s);  // "" for serving: the trace leaves it out
std::string_view to_string(Release r);
std::string_view to_string(KvWriter w);
std::optional<Release> parse_release(std::string_view s);
std::optional<KvWriter> parse_kv_writer(std::string_view s);
std::string release_names();
std::string kv_writer_names();
std::optional<WarmupPhase> parse_warmup_phase(std::string_view s);
std::optional<PaddingKernel> parse_padding_kernel(std::string_view s);
std::optional<WeightTable> parse_weight_table(std::string_view s);
std::optional<StepKind> parse_step_kind(std::string_view s);
std::string warmup_phase_names();
std::string padding_kernel_names();
std::string weight_table_names();

}  // namespace ppspec::core
