#include "core/probes.h"

#include <array>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::core {

namespace {

// What a kind's value may be: anything (a hash, a row of device memory), 0 or 1, or a count the
// monitors do arithmetic on (then its header integers are counts too, -1 allowed for "none").
enum class ProbeValue { any, flag, count };

// Where a kind's integers are: `header` fixed ones, then rows of `row` each (0: no rows). The
// rows of padding_rows are as wide as their kernel's fields (row_width below).
struct KindLayout {
  EventKind kind;
  size_t header;
  size_t row;
  ProbeValue value;
  std::string_view words;
};

// The largest count a probe carries: far past any run, small enough that sums of a few never overflow.
constexpr int64_t kProbeCountMax = int64_t{1} << 40;

constexpr size_t kRowByKernel = SIZE_MAX;

// The trace format's layouts, written by the engine since its probes existed.
constexpr std::array kKindLayouts{
    KindLayout{EventKind::batch_scheduled, 0, 1, ProbeValue::any, "[request ids in batch order...]"},
    KindLayout{EventKind::request_scheduled, 3, 1, ProbeValue::count,
               "[tokens scheduled, prefill length, req-state index, the prompt if new...]"},
    KindLayout{EventKind::inputs_built, 1, 1, ProbeValue::flag, "[first position, input ids...]"},
    KindLayout{EventKind::tokens_sampled, 0, 1, ProbeValue::any, "[sampled tokens...]"},
    KindLayout{EventKind::drafts_proposed, 0, 1, ProbeValue::any, "[drafts...]"},
    KindLayout{EventKind::drafts_adopted, 0, 1, ProbeValue::any, "[drafts...]"},
    KindLayout{EventKind::warmup_phase, 0, 0, ProbeValue::any, ""},
    KindLayout{EventKind::padding_rows, 0, kRowByKernel, ProbeValue::any, "[per padding row the kernel's fields...]"},
    KindLayout{EventKind::gate, 0, 1, ProbeValue::flag, "[per batch row 1 when it needs its sample...]"},
    KindLayout{EventKind::table_bound, 2, 0, ProbeValue::any, "[entries, entries never written]"},
    KindLayout{EventKind::feedback_adopted, 2, 1, ProbeValue::any, "[num_sampled, num_rejected, sampled tokens...]"},
    KindLayout{EventKind::stage_output, 3, StageOutputRow::kFields, ProbeValue::any,
               "[layers done, first lane, lanes, then per row: position, context lane, hash of the deep lanes]"},
    KindLayout{EventKind::blocks_allocated, 0, 1, ProbeValue::any, "[block ids in block-table order...]"},
    KindLayout{EventKind::blocks_freed, 0, 1, ProbeValue::any, "[block ids...]"},
    KindLayout{EventKind::request_released, 0, 1, ProbeValue::any,
               "[block ids held until its step in flight returns...]"},
    KindLayout{EventKind::kv_slots, 0, KvSlotRow::kFields, ProbeValue::any, "[per row: request, position, KV slot]"},
    KindLayout{EventKind::serving_ended, 0, 0, ProbeValue::any, ""},
    KindLayout{EventKind::abort_arrived, 0, 0, ProbeValue::any, ""},
    KindLayout{EventKind::step_returned, 0, 0, ProbeValue::any, ""},
    KindLayout{EventKind::bonus_adopted, 1, 0, ProbeValue::any, "[the token in the row's last_sampled]"},
    KindLayout{EventKind::blocks_shared, 0, 1, ProbeValue::any, "[block ids in block-table order...]"},
    KindLayout{EventKind::blocks_cached, 0, 1, ProbeValue::any, "[block ids...]"},
    KindLayout{EventKind::draft_budget, 1, 0, ProbeValue::any, "[the rank's own confidence estimate, in 1/65536ths]"},
    KindLayout{EventKind::accepted_readback, 0, AcceptedReadbackProbe::kFields, ProbeValue::any,
               "[per row of the copied step: request id, tokens it accepted]"},
    KindLayout{EventKind::table_updated, 0, 1, ProbeValue::any,
               "[last_sampled of every table row, by req-state index...]"},
    KindLayout{EventKind::kv_exported, 0, 1, ProbeValue::count, "[exported block ids in block-table order...]"},
    KindLayout{EventKind::kv_sent, KvSegmentFields::kFields, 1, ProbeValue::count,
               "[part, producer layer, consumer layer, first lane, lanes, then the blocks sent...]"},
    KindLayout{EventKind::kv_pulled, KvSegmentFields::kFields, 2, ProbeValue::count,
               "[part, producer layer, consumer layer, first lane, lanes, then per block: remote, local]"},
    KindLayout{EventKind::kv_ready, 0, 0, ProbeValue::count, ""},
    KindLayout{EventKind::attention_split, 2, AttentionSplitProbe::kRequestFields, ProbeValue::count,
               "[decode-path query rows, block-table rows given it, then per decode-path request: id, query length]"},
    KindLayout{EventKind::eagle_taps, 0, EagleTapsProbe::kTapFields, ProbeValue::count,
               "[per tap the forward digested: the tapped layer it fills, the layer whose output it digested]"},
    KindLayout{EventKind::engine_stalled, 2, 1, ProbeValue::count,
               "[free KV blocks, usable KV blocks, then the waiting request ids in queue order...]"},
};

const KindLayout* kind_layout(EventKind k) {
  for (const KindLayout& l : kKindLayouts)
    if (l.kind == k) return &l;
  return nullptr;
}

// A router row's width is the model's topk + 1, which the probe does not carry: any count reads.
size_t row_width(const KindLayout& l, const Event& e) {
  if (l.row != kRowByKernel) return l.row;
  return e.subject.padding_kernel == PaddingKernel::topk_softplus_sqrt ? 1 : PreparedPaddingRow::kFields;
}

// The layout's header as a view, checked: decoding an event the reader or an encoder did not make
// is a bug of the program, not bad input.
std::span<const int64_t> checked_ints(const Event& e, EventKind kind) {
  PPSPEC_ASSERT(e.kind == kind);
  PPSPEC_ASSERT(probe_layout_ok(e), "{}", probe_layout_error(e));
  return e.ints;
}

void append_span(std::vector<int64_t>& out, std::span<const int64_t> more) {
  out.insert(out.end(), more.begin(), more.end());
}

bool ints_fit(const KindLayout& l, const Event& e) {
  const size_t n = e.ints.size();
  const size_t width = row_width(l, e);
  return width == 0 ? n == l.header : n >= l.header && (n - l.header) % width == 0;
}

bool is_count(int64_t v) { return v >= -1 && v <= kProbeCountMax; }

bool value_fits(const KindLayout& l, const Event& e) {
  switch (l.value) {
    case ProbeValue::any: return true;
    case ProbeValue::flag: return e.value == 0 || e.value == 1;
    case ProbeValue::count:
      if (!is_count(e.value)) return false;
      for (size_t i = 0; i < l.header && i < e.ints.size(); ++i)
        if (!is_count(e.ints[i])) return false;
      return true;
  }
  return false;
}

}  // namespace

bool probe_layout_ok(const Event& e) {
  const KindLayout* l = kind_layout(e.kind);
  if (l == nullptr) return e.ints.empty();
  return ints_fit(*l, e) && value_fits(*l, e);
}

std::string probe_layout_error(const Event& e) {
  const KindLayout* l = kind_layout(e.kind);
  if (l == nullptr)
    return e.ints.empty() ? ""
                          : fmt::format("this {} event carries integers ({}); only engine probes do", to_string(e.kind),
                                        e.ints.size());
  const size_t n = e.ints.size();
  const size_t width = row_width(*l, e);
  if (!ints_fit(*l, e))
    return fmt::format("this {} event holds {} integers; its layout is {}{}", to_string(e.kind), n,
                       l->words.empty() ? "no integers" : l->words,
                       width > 1 ? fmt::format(" ({} per row)", width) : "");
  // A KV transfer's segment names its part by number: one of the three.
  const bool segment = e.kind == EventKind::kv_sent || e.kind == EventKind::kv_pulled;
  if (segment && (e.ints[0] < 0 || e.ints[0] > static_cast<int64_t>(KvPart::draft)))
    return fmt::format("this {} event's segment part is {}; expected 0 (context lane), 1 (layer) or 2 (drafter)",
                       to_string(e.kind), e.ints[0]);
  return probe_value_error(e);
}

std::string probe_value_error(const Event& e) {
  const KindLayout* l = kind_layout(e.kind);
  if (l == nullptr || value_fits(*l, e)) return "";
  if (l->value == ProbeValue::flag)
    return fmt::format("this {} event's value is {}; expected 0 or 1", to_string(e.kind), e.value);
  return fmt::format("this {} event's value and its first {} integers are counts, each in [-1, {}]", to_string(e.kind),
                     l->header, kProbeCountMax);
}

void BatchScheduledProbe::encode(ProbeData& out) const {
  out.value = num_tokens;
  out.subject.step_kind = step_kind;
  append_span(out.ints, request_ids);
}

BatchScheduledProbe BatchScheduledProbe::decode(const Event& e) {
  return {e.subject.step_kind, e.value, checked_ints(e, kKind)};
}

void RequestScheduledProbe::encode(ProbeData& out) const {
  out.value = num_computed;
  out.ints.insert(out.ints.end(), {num_scheduled, prefill_len, state_index});
  append_span(out.ints, prompt);
}

RequestScheduledProbe RequestScheduledProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value, v[0], v[1], v[2], v.subspan(3)};
}

void InputsBuiltProbe::encode(ProbeData& out) const {
  out.value = decode_row ? 1 : 0;
  out.ints.push_back(first_position);
  append_span(out.ints, input_ids);
}

InputsBuiltProbe InputsBuiltProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value == 1, v[0], v.subspan(1)};
}

void TokensSampledProbe::encode(ProbeData& out) const {
  out.value = num_rejected;
  append_span(out.ints, tokens);
}

TokensSampledProbe TokensSampledProbe::decode(const Event& e) { return {checked_ints(e, kKind), e.value}; }

void DraftsProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(kind == EventKind::drafts_proposed || kind == EventKind::drafts_adopted);
  append_span(out.ints, drafts);
}

DraftsProbe DraftsProbe::decode(const Event& e) {
  PPSPEC_ASSERT(e.kind == EventKind::drafts_proposed || e.kind == EventKind::drafts_adopted);
  return {e.kind, checked_ints(e, e.kind)};
}

void WarmupPhaseProbe::encode(ProbeData& out) const { out.subject.phase = phase; }

WarmupPhaseProbe WarmupPhaseProbe::decode(const Event& e) {
  checked_ints(e, kKind);
  return {e.subject.phase};
}

void PaddingRowsProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(kernel != PaddingKernel::none);
  out.value = first_row;
  out.subject.padding_kernel = kernel;
  append_span(out.ints, fields);
}

PaddingRowsProbe PaddingRowsProbe::decode(const Event& e) {
  return {e.subject.padding_kernel, e.value, checked_ints(e, kKind)};
}

void PreparedPaddingRow::append_to(std::vector<int64_t>& out) const {
  out.insert(out.end(), {input_id, position, is_padding, slot, unwritten});
}

PreparedPaddingRow PreparedPaddingRow::at(const PaddingRowsProbe& p, size_t row) {
  PPSPEC_ASSERT(p.kernel != PaddingKernel::topk_softplus_sqrt && row < count(p));
  const auto f = p.fields.subspan(row * kFields, kFields);
  return {f[0], f[1], f[2], f[3], f[4]};
}

RouterPaddingRow RouterPaddingRow::at(const PaddingRowsProbe& p, size_t row, size_t topk) {
  PPSPEC_ASSERT(p.kernel == PaddingKernel::topk_softplus_sqrt && row < count(p, topk));
  const auto f = p.fields.subspan(row * (topk + 1), topk + 1);
  return {f.first(topk), f[topk]};
}

void GateProbe::encode(ProbeData& out) const {
  out.value = posts_feedback ? 1 : 0;
  append_span(out.ints, rows);
}

GateProbe GateProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value == 1, v};
}

void TableBoundProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(table != WeightTable::none);
  out.value = hash;
  out.subject.table = table;
  out.ints.insert(out.ints.end(), {entries, unwritten});
}

TableBoundProbe TableBoundProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.subject.table, e.value, v[0], v[1]};
}

void FeedbackAdoptedProbe::encode(ProbeData& out) const {
  out.value = state_index;
  out.ints.insert(out.ints.end(), {num_sampled, num_rejected});
  append_span(out.ints, sampled);
}

FeedbackAdoptedProbe FeedbackAdoptedProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value, v[0], v[1], v.subspan(2)};
}

void StageOutputRow::append_to(std::vector<int64_t>& out) const {
  out.insert(out.end(), {position, context_lane, deep_hash});
}

StageOutputRow StageOutputProbe::row(size_t i) const {
  PPSPEC_ASSERT(i < row_count());
  const auto f = rows.subspan(i * StageOutputRow::kFields, StageOutputRow::kFields);
  return {f[0], f[1], f[2]};
}

void StageOutputProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(lanes >= 0 && rows.size() % StageOutputRow::kFields == 0);
  out.ints.insert(out.ints.end(), {layers_done, first_lane, lanes});
  append_span(out.ints, rows);
}

StageOutputProbe StageOutputProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {v[0], v[1], v[2], v.subspan(3)};
}

void BlocksAllocatedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(first_index >= 0 && !blocks.empty());
  out.value = first_index;
  append_span(out.ints, blocks);
}

BlocksAllocatedProbe BlocksAllocatedProbe::decode(const Event& e) { return {e.value, checked_ints(e, kKind)}; }

void BlocksSharedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(first_index >= 0 && !blocks.empty());
  out.value = first_index;
  append_span(out.ints, blocks);
}

BlocksSharedProbe BlocksSharedProbe::decode(const Event& e) { return {e.value, checked_ints(e, kKind)}; }

void BlocksCachedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(!blocks.empty());
  append_span(out.ints, blocks);
}

BlocksCachedProbe BlocksCachedProbe::decode(const Event& e) { return {checked_ints(e, kKind)}; }

void AcceptedReadbackProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(read_at_step >= 0 && rows.size() % kFields == 0);
  out.value = read_at_step;
  append_span(out.ints, rows);
}

AcceptedReadbackProbe AcceptedReadbackProbe::decode(const Event& e) { return {e.value, checked_ints(e, kKind)}; }

void BlocksFreedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(reason != Release::none && !blocks.empty());
  out.subject.release = reason;
  append_span(out.ints, blocks);
}

BlocksFreedProbe BlocksFreedProbe::decode(const Event& e) { return {e.subject.release, checked_ints(e, kKind)}; }

void RequestReleasedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(reason != Release::none && state_index >= -1);  // -1: it never held one (its KV was loading)
  out.value = state_index;
  out.subject.release = reason;
  append_span(out.ints, fenced_blocks);
}

RequestReleasedProbe RequestReleasedProbe::decode(const Event& e) {
  return {e.subject.release, e.value, checked_ints(e, kKind)};
}

void KvSlotRow::append_to(std::vector<int64_t>& rows) const { rows.insert(rows.end(), {request, position, slot}); }

KvSlotRow KvSlotsProbe::row(size_t i) const {
  PPSPEC_ASSERT(i < row_count());
  const int64_t* f = rows.data() + i * KvSlotRow::kFields;
  return {f[0], f[1], f[2]};
}

void KvSlotsProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(writer != KvWriter::none && rows.size() % KvSlotRow::kFields == 0);
  out.subject.kv_writer = writer;
  append_span(out.ints, rows);
}

KvSlotsProbe KvSlotsProbe::decode(const Event& e) { return {e.subject.kv_writer, checked_ints(e, kKind)}; }

void ServingEndedProbe::encode(ProbeData&) const {}

ServingEndedProbe ServingEndedProbe::decode(const Event& e) {
  checked_ints(e, kKind);
  return {};
}

void StepReturnedProbe::encode(ProbeData&) const {}

StepReturnedProbe StepReturnedProbe::decode(const Event& e) {
  checked_ints(e, kKind);
  return {};
}

void BonusAdoptedProbe::encode(ProbeData& out) const {
  out.value = state_index;
  out.ints.push_back(token);
}

BonusAdoptedProbe BonusAdoptedProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value, v[0]};
}

void TableUpdatedProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(!last_sampled.empty(), "a table of no rows");
  append_span(out.ints, last_sampled);
}

TableUpdatedProbe TableUpdatedProbe::decode(const Event& e) { return {checked_ints(e, kKind)}; }

void DraftBudgetProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(budget >= 1, "a draft budget of {}", budget);
  out.value = budget;
  out.ints.push_back(confidence);
}

DraftBudgetProbe DraftBudgetProbe::decode(const Event& e) {
  const auto v = checked_ints(e, kKind);
  return {e.value, v[0]};
}

void AbortArrivedProbe::encode(ProbeData&) const {}

AbortArrivedProbe AbortArrivedProbe::decode(const Event& e) {
  checked_ints(e, kKind);
  return {};
}

void KvSegmentFields::append_to(std::vector<int64_t>& ints) const {
  ints.insert(ints.end(), {static_cast<int64_t>(part), src_layer, dst_layer, lane_begin, lane_count});
}

KvSegmentFields KvSegmentFields::decode(std::span<const int64_t> h) {
  PPSPEC_ASSERT(h.size() >= kFields);
  PPSPEC_ASSERT(h[0] >= 0 && h[0] <= static_cast<int64_t>(KvPart::draft), "a KV segment part {}", h[0]);
  return {static_cast<KvPart>(h[0]), h[1], h[2], h[3], h[4]};
}

void KvExportedProbe::encode(ProbeData& out) const {
  out.value = prompt_tokens;
  append_span(out.ints, blocks);
}

KvExportedProbe KvExportedProbe::decode(const Event& e) { return {e.value, checked_ints(e, kKind)}; }

namespace {

// kv_sent and kv_pulled: the peer rank as the value, the segment as the header, then the rows.
void encode_segment_rows(ProbeData& out, int64_t peer, const KvSegmentFields& segment, std::span<const int64_t> rows) {
  out.value = peer;
  segment.append_to(out.ints);
  append_span(out.ints, rows);
}

template <typename P>
P decode_segment_rows(const Event& e) {
  const std::span<const int64_t> ints = checked_ints(e, P::kKind);
  return {e.value, KvSegmentFields::decode(ints), ints.subspan(KvSegmentFields::kFields)};
}

}  // namespace

void KvSentProbe::encode(ProbeData& out) const { encode_segment_rows(out, consumer, segment, blocks); }

KvSentProbe KvSentProbe::decode(const Event& e) { return decode_segment_rows<KvSentProbe>(e); }

void KvPulledProbe::encode(ProbeData& out) const {
  PPSPEC_ASSERT(pairs.size() % kPairFields == 0);
  encode_segment_rows(out, producer, segment, pairs);
}

KvPulledProbe KvPulledProbe::decode(const Event& e) { return decode_segment_rows<KvPulledProbe>(e); }

void KvReadyProbe::encode(ProbeData& out) const { out.value = reports; }

KvReadyProbe KvReadyProbe::decode(const Event& e) {
  checked_ints(e, kKind);
  return {e.value};
}

void AttentionSplitProbe::encode(ProbeData& out) const {
  out.value = reorder_threshold;
  out.ints.push_back(decode_rows);
  out.ints.push_back(table_rows);
  append_span(out.ints, requests);
}

AttentionSplitProbe AttentionSplitProbe::decode(const Event& e) {
  const std::span<const int64_t> ints = checked_ints(e, kKind);
  return {e.value, ints[0], ints[1], ints.subspan(2)};
}

void EagleTapsProbe::encode(ProbeData& out) const {
  out.value = static_cast<int64_t>(tap_count());
  append_span(out.ints, taps);
}

EagleTapsProbe EagleTapsProbe::decode(const Event& e) { return {checked_ints(e, kKind)}; }

void EngineStalledProbe::encode(ProbeData& out) const {
  out.value = static_cast<int64_t>(waiting.size());
  out.ints.push_back(free_blocks);
  out.ints.push_back(usable_blocks);
  append_span(out.ints, waiting);
}

EngineStalledProbe EngineStalledProbe::decode(const Event& e) {
  const std::span<const int64_t> ints = checked_ints(e, kKind);
  return {ints[0], ints[1], ints.subspan(2)};
}

}  // namespace ppspec::core
