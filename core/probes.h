// The engine probes' data, typed: one struct per probe kind with named fields.
//
// On the wire (core::Event, and a trace's JSON Lines) a probe's data is its `value`, its `ints` and
// its typed subject. Which integer means what is a fact of the trace format, since old traces hold
// it: it is written down once, in the layout table of probes.cc, and each struct below is encoded
// into and decoded from that layout by its own pair of functions beside the table. The trace reader
// rejects an event whose integers do not have its kind's layout (probe_layout_error), and the
// engine only publishes encoded structs, so a consumer reads `Probe::decode(e)` and never indexes
// `e.ints` by position.
//
// Decoded structs view the event's integers (spans): decoding allocates nothing, and a view lives
// as long as the event it was decoded from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/event.h"

namespace ppspec::core {

// What encoding a probe writes onto an event: its value, integers and subject.
struct ProbeData {
  int64_t value = -1;
  std::vector<int64_t> ints;
  ProbeSubject subject{};
};

// Empty when `e`'s integers (and a flag's value) have the layout of its kind, else what is wrong,
// in words. Events that are not engine probes carry no integers.
std::string probe_layout_error(const Event& e);
std::string probe_value_error(const Event& e);  // the value part of probe_layout_error alone
bool probe_layout_ok(const Event& e);           // probe_layout_error(e).empty(), without formatting

// batch_scheduled: the engine core scheduled a step's batch.
struct BatchScheduledProbe {
  static constexpr EventKind kKind = EventKind::batch_scheduled;
  StepKind step_kind = StepKind::serving;
  int64_t num_tokens = 0;                // the batch's rows
  std::span<const int64_t> request_ids;  // in batch order
  void encode(ProbeData& out) const;
  static BatchScheduledProbe decode(const Event& e);
};

// request_scheduled: one request of a step's batch, as the engine core scheduled it.
struct RequestScheduledProbe {
  static constexpr EventKind kKind = EventKind::request_scheduled;
  int64_t num_computed = 0;   // tokens the request had computed before this step
  int64_t num_scheduled = 0;  // tokens scheduled this step
  int64_t prefill_len = 0;
  int64_t state_index = 0;          // its row in the request-state tables
  std::span<const int64_t> prompt;  // the prompt when the request is new this step, else empty
  void encode(ProbeData& out) const;
  static RequestScheduledProbe decode(const Event& e);
};

// inputs_built: a rank built a request's input rows.
struct InputsBuiltProbe {
  static constexpr EventKind kKind = EventKind::inputs_built;
  bool decode_row = false;             // a decode step's rows (else a prefill chunk's)
  int64_t first_position = 0;          // the position of the first row
  std::span<const int64_t> input_ids;  // row by row
  void encode(ProbeData& out) const;
  static InputsBuiltProbe decode(const Event& e);
};

// tokens_sampled: the last stage's sample for a request.
struct TokensSampledProbe {
  static constexpr EventKind kKind = EventKind::tokens_sampled;
  std::span<const int64_t> tokens;  // the accepted drafts and the bonus token
  int64_t num_rejected = 0;
  void encode(ProbeData& out) const;
  static TokensSampledProbe decode(const Event& e);
};

// drafts_proposed (last stage) and drafts_adopted (an earlier stage's deferred update).
struct DraftsProbe {
  EventKind kind = EventKind::drafts_proposed;  // or drafts_adopted
  std::span<const int64_t> drafts;
  void encode(ProbeData& out) const;
  static DraftsProbe decode(const Event& e);
};

// warmup_phase: a worker entered a phase.
struct WarmupPhaseProbe {
  static constexpr EventKind kKind = EventKind::warmup_phase;
  WarmupPhase phase = WarmupPhase::none;
  void encode(ProbeData& out) const;
  static WarmupPhaseProbe decode(const Event& e);
};

// padding_rows: what a kernel left in a CUDA graph's padding rows.
struct PaddingRowsProbe {
  static constexpr EventKind kKind = EventKind::padding_rows;
  PaddingKernel kernel = PaddingKernel::none;
  int64_t first_row = 0;            // the first padding row: the rows in use before it
  std::span<const int64_t> fields;  // per padding row the kernel's fields (below), row after row
  void encode(ProbeData& out) const;
  static PaddingRowsProbe decode(const Event& e);
};

// A padding row of prepare_inputs or prepare_dflash_inputs.
struct PreparedPaddingRow {
  static constexpr size_t kFields = 5;
  int64_t input_id = 0;
  int64_t position = 0;
  int64_t is_padding = 0;
  int64_t slot = 0;
  int64_t unwritten = 0;  // 1: the kernel did not store the row this step
  void append_to(std::vector<int64_t>& fields) const;
  static PreparedPaddingRow at(const PaddingRowsProbe& p, size_t row);
  static size_t count(const PaddingRowsProbe& p) { return p.fields.size() / kFields; }
};

// A padding row of topk_softplus_sqrt: `topk` expert ids, then how many weights are non-zero. The
// width depends on the model's topk, which the probe does not carry: the reader of the row knows it.
struct RouterPaddingRow {
  std::span<const int64_t> expert_ids;
  int64_t nonzero_weights = 0;
  static RouterPaddingRow at(const PaddingRowsProbe& p, size_t row, size_t topk);
  static size_t count(const PaddingRowsProbe& p, size_t topk) { return p.fields.size() / (topk + 1); }
};

// gate: a rank evaluated the feedback gate of a step.
struct GateProbe {
  static constexpr EventKind kKind = EventKind::gate;
  bool posts_feedback = false;
  std::span<const int64_t> rows;  // per batch row 1 when it needs its sample (empty: no mask)
  void encode(ProbeData& out) const;
  static GateProbe decode(const Event& e);
};

// table_bound: a rank bound a weight table at its first use.
struct TableBoundProbe {
  static constexpr EventKind kKind = EventKind::table_bound;
  WeightTable table = WeightTable::none;
  int64_t hash = 0;  // FNV-1a of its words
  int64_t entries = 0;
  int64_t unwritten = 0;  // entries still holding the allocation's poison
  void encode(ProbeData& out) const;
  static TableBoundProbe decode(const Event& e);
};

// feedback_adopted: what an earlier stage's deferred update read from the feedback of `step`.
struct FeedbackAdoptedProbe {
  static constexpr EventKind kKind = EventKind::feedback_adopted;
  int64_t state_index = 0;  // the table row it wrote
  int64_t num_sampled = 0;
  int64_t num_rejected = 0;
  std::span<const int64_t> sampled;  // the sampled tokens it read
  void encode(ProbeData& out) const;
  static FeedbackAdoptedProbe decode(const Event& e);
};

// stage_output: a rank's activations for a request's rows after its stage's layers.
struct StageOutputRow {
  static constexpr size_t kFields = 3;
  int64_t position = 0;
  int64_t context_lane = 0;
  int64_t deep_hash = 0;  // FNV-1a of the rank's deep lanes (core/hash.h)
  void append_to(std::vector<int64_t>& rows) const;
};

struct StageOutputProbe {
  static constexpr EventKind kKind = EventKind::stage_output;
  int64_t layers_done = 0;
  int64_t first_lane = 0;
  int64_t lanes = 0;
  std::span<const int64_t> rows;  // StageOutputRow::kFields each
  size_t row_count() const { return rows.size() / StageOutputRow::kFields; }
  StageOutputRow row(size_t i) const;
  void encode(ProbeData& out) const;
  static StageOutputProbe decode(const Event& e);
};

// blocks_allocated: the engine core gave a request KV blocks at a step; they extend its block table.
struct BlocksAllocatedProbe {
  static constexpr EventKind kKind = EventKind::blocks_allocated;
  int64_t first_index = 0;          // the block-table column of the first of them
  std::span<const int64_t> blocks;  // in block-table order
  void encode(ProbeData& out) const;
  static BlocksAllocatedProbe decode(const Event& e);
};

// blocks_shared: a request's prefill begins with blocks of the prefix cache (a hit): it holds them
// too, read-only, as its block table's columns from `first_index` (0) on. Its prefill starts after
// them; nothing of it may store into them.
struct BlocksSharedProbe {
  static constexpr EventKind kKind = EventKind::blocks_shared;
  int64_t first_index = 0;
  std::span<const int64_t> blocks;  // in block-table order
  void encode(ProbeData& out) const;
  static BlocksSharedProbe decode(const Event& e);
};

// blocks_cached: blocks of a request, full of tokens that this step or an earlier one computes,
// entered the prefix cache at this step: other requests may share them from now on, and no store
// of a later step may go into them. A block loses its hash when it is given again (blocks_allocated).
struct BlocksCachedProbe {
  static constexpr EventKind kKind = EventKind::blocks_cached;
  std::span<const int64_t> blocks;
  void encode(ProbeData& out) const;
  static BlocksCachedProbe decode(const Event& e);
};

// A segment of a disaggregated KV transfer, as kv_sent and kv_pulled carry it in their header.
struct KvSegmentFields {
  static constexpr size_t kFields = 5;
  KvPart part = KvPart::layer;
  int64_t src_layer = -1;  // the producer's layer it was gathered from (-1: not a layer)
  int64_t dst_layer = -1;  // the consumer's layer it goes into
  int64_t lane_begin = 0;  // global lanes
  int64_t lane_count = 1;
  void append_to(std::vector<int64_t>& ints) const;
  static KvSegmentFields decode(std::span<const int64_t> header);
};

// kv_exported: the prefill instance's engine core finished a request's prompt (value: its tokens)
// and hands the decode instance the blocks that hold its KV.
struct KvExportedProbe {
  static constexpr EventKind kKind = EventKind::kv_exported;
  int64_t prompt_tokens = 0;
  std::span<const int64_t> blocks;
  void encode(ProbeData& out) const;
  static KvExportedProbe decode(const Event& e);
};

// kv_sent: a prefill rank's connector sent one segment of a request's blocks to a decode rank
// (value), and the send completed.
struct KvSentProbe {
  static constexpr EventKind kKind = EventKind::kv_sent;
  int64_t consumer = -1;
  KvSegmentFields segment;
  std::span<const int64_t> blocks;
  void encode(ProbeData& out) const;
  static KvSentProbe decode(const Event& e);
};

// kv_pulled: a decode rank's connector received one segment of a request's KV from a prefill rank
// (value) and wrote it into its blocks: remote block i went into local block i, pair by pair; the
// copy completed.
struct KvPulledProbe {
  static constexpr EventKind kKind = EventKind::kv_pulled;
  static constexpr size_t kPairFields = 2;
  int64_t producer = -1;
  KvSegmentFields segment;
  std::span<const int64_t> pairs;  // remote, local per block
  size_t pair_count() const { return pairs.size() / kPairFields; }
  void encode(ProbeData& out) const;
  static KvPulledProbe decode(const Event& e);
};

// kv_ready: the decode instance's engine core counted every rank's report (value) that a request's
// pulls completed: its KV is in place, and the request may be admitted.
struct KvReadyProbe {
  static constexpr EventKind kKind = EventKind::kv_ready;
  int64_t reports = 0;
  void encode(ProbeData& out) const;
  static KvReadyProbe decode(const Event& e);
};

// attention_split: a rank built a step's attention metadata for TRITON_MLA (engine/attention_groups.h):
// the batch's leading requests of query length up to the group's reorder threshold (value) go to
// the decode path, which launches a program per query row (decode_rows) over one block-table row
// and one sequence length per request (table_rows); a causal layer's rows match them one to one.
struct AttentionSplitProbe {
  static constexpr EventKind kKind = EventKind::attention_split;
  static constexpr size_t kRequestFields = 2;
  int64_t reorder_threshold = 0;
  int64_t decode_rows = 0;
  int64_t table_rows = 0;
  std::span<const int64_t> requests;  // id, query length per decode-path request
  size_t request_count() const { return requests.size() / kRequestFields; }
  void encode(ProbeData& out) const;
  static AttentionSplitProbe decode(const Event& e);
};

// eagle_taps: what one forward of a rank digested into the EAGLE drafter's taps: per tap it filled,
// the tapped layer (which tap buffer) and the target layer whose output it digested. Published once
// per forward the host runs (a decode graph's capture stands for its replays).
struct EagleTapsProbe {
  static constexpr EventKind kKind = EventKind::eagle_taps;
  static constexpr size_t kTapFields = 2;
  std::span<const int64_t> taps;  // tapped layer, digested layer per tap filled
  size_t tap_count() const { return taps.size() / kTapFields; }
  void encode(ProbeData& out) const;
  static EagleTapsProbe decode(const Event& e);
};

// engine_stalled: the engine core has no step in flight, no request left to arrive, and waiting
// requests its schedule admits none of: vLLM's busy loop would poll an empty input queue for ever.
// What it would wait for: the free KV blocks, the usable ones (the null block is not), and the
// waiting requests in queue order.
struct EngineStalledProbe {
  static constexpr EventKind kKind = EventKind::engine_stalled;
  int64_t free_blocks = 0;
  int64_t usable_blocks = 0;
  std::span<const int64_t> waiting;
  void encode(ProbeData& out) const;
  static EngineStalledProbe decode(const Event& e);
};

// accepted_readback: the last stage's tp rank 0 read, on the host, what each request of step `step`
// accepted (its num_sampled: accepted drafts + the bonus token), from the pinned buffer a
// non-blocking copy filled (vLLM's num_accepted_tokens_cpu), at the start of step `value`.
struct AcceptedReadbackProbe {
  static constexpr EventKind kKind = EventKind::accepted_readback;
  static constexpr size_t kFields = 2;  // per row: request id, tokens accepted
  int64_t read_at_step = -1;
  std::span<const int64_t> rows;
  void encode(ProbeData& out) const;
  static AcceptedReadbackProbe decode(const Event& e);
};

// blocks_freed: a request's KV blocks went back to the free pool (with prefix caching: the
// request's hold on them; a block another request shares stays held).
struct BlocksFreedProbe {
  static constexpr EventKind kKind = EventKind::blocks_freed;
  Release reason = Release::none;
  std::span<const int64_t> blocks;
  void encode(ProbeData& out) const;
  static BlocksFreedProbe decode(const Event& e);
};

// request_released: the engine core let go of a request (it ended, or was preempted): its state
// index is free from the next step on (-1: it never held one, a disaggregated request aborted while
// its KV loaded); its blocks are freed now (blocks_freed follows) or, while a step or a KV pull
// that writes them is in flight, when that step returns or the pull completes (the fenced blocks).
struct RequestReleasedProbe {
  static constexpr EventKind kKind = EventKind::request_released;
  Release reason = Release::none;
  int64_t state_index = 0;
  std::span<const int64_t> fenced_blocks;
  void encode(ProbeData& out) const;
  static RequestReleasedProbe decode(const Event& e);
};

// kv_slots: the KV slots a rank's kernel stores a step's rows through, as the kernel that computes
// them left them in the slot mapping (read back); one probe per rank, step and writer.
struct KvSlotRow {
  static constexpr size_t kFields = 3;
  int64_t request = -1;
  int64_t position = 0;
  int64_t slot = 0;  // kernels::kPadSlot (-1): the row stores nothing
  void append_to(std::vector<int64_t>& rows) const;
};

struct KvSlotsProbe {
  static constexpr EventKind kKind = EventKind::kv_slots;
  KvWriter writer = KvWriter::none;
  std::span<const int64_t> rows;  // KvSlotRow::kFields each
  size_t row_count() const { return rows.size() / KvSlotRow::kFields; }
  KvSlotRow row(size_t i) const;
  void encode(ProbeData& out) const;
  static KvSlotsProbe decode(const Event& e);
};

// serving_ended: the engine core saw every request end and every step in flight return; what any
// request still holds now, it holds for good.
struct ServingEndedProbe {
  static constexpr EventKind kKind = EventKind::serving_ended;
  void encode(ProbeData& out) const;
  static ServingEndedProbe decode(const Event& e);
};

// step_returned: the step's output reached the engine core (its requests' blocks may be freed from
// here on; a rank still busy with the step is one the engine core does not wait for).
struct StepReturnedProbe {
  static constexpr EventKind kKind = EventKind::step_returned;
  void encode(ProbeData& out) const;
  static StepReturnedProbe decode(const Event& e);
};

// bonus_adopted: what an earlier stage's deferred update of step `step` left in the request's row
// of its tables, read back after the kernel (feedback_adopted says what it read; drafts_adopted
// holds the drafts row): the token its next decode step embeds first.
struct BonusAdoptedProbe {
  static constexpr EventKind kKind = EventKind::bonus_adopted;
  int64_t state_index = 0;  // the table row
  int64_t token = 0;        // last_sampled there
  void encode(ProbeData& out) const;
  static BonusAdoptedProbe decode(const Event& e);
};

// table_updated: every row of an earlier stage's last_sampled table after its deferred update of
// step `step`, read back with the rows' bonus_adopted: where the update's writes landed, so that a
// scatter through another batch's row mapping shows as the rows it wrote, not only as the rows
// it missed.
struct TableUpdatedProbe {
  static constexpr EventKind kKind = EventKind::table_updated;
  std::span<const int64_t> last_sampled;  // by req-state index
  void encode(ProbeData& out) const;
  static TableUpdatedProbe decode(const Event& e);
};

// draft_budget: the drafts per request a last-stage rank's drafter ran step `step` with (the query
// rows per request of the prepare_dflash_inputs it launched), and the rank's own estimate of the
// confidence it would decide from: every TP rank of the stage must run with one budget.
struct DraftBudgetProbe {
  static constexpr EventKind kKind = EventKind::draft_budget;
  int64_t budget = 0;
  int64_t confidence = 0;
  void encode(ProbeData& out) const;
  static DraftBudgetProbe decode(const Event& e);
};

// abort_arrived: a client's abort of the request reached the engine core, which must let go of
// the request wherever it is (waiting, running, in a batch in flight).
struct AbortArrivedProbe {
  static constexpr EventKind kKind = EventKind::abort_arrived;
  void encode(ProbeData& out) const;
  static AbortArrivedProbe decode(const Event& e);
};

}  // namespace ppspec::core
