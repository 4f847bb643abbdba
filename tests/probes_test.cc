// The engine probes' typed payloads (core/probes.h): each struct encodes into its kind's layout in
// the trace format and decodes back to the same fields; an event whose integers do not fit its
// layout is named, kind by kind.
#include <gtest/gtest.h>

#include <vector>

#include "core/assert.h"
#include "core/probes.h"

namespace ppspec::testing {
namespace {

// Encodes `p` onto an event of its kind, as the engine's publish does.
template <typename Payload>
core::Event encoded(const Payload& p, core::ProbeData& data, core::EventKind kind = Payload::kKind) {
  p.encode(data);
  core::Event e;
  e.kind = kind;
  e.value = data.value;
  e.subject = data.subject;
  e.ints = data.ints;
  EXPECT_TRUE(core::probe_layout_ok(e)) << core::probe_layout_error(e);
  return e;
}

std::vector<int64_t> list(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

TEST(Probes, SchedulingProbesRoundTripThroughTheirLayout) {
  const std::vector<int64_t> ids{7, 9}, prompt{40, 41, 42};
  core::ProbeData batch_data, request_data;
  const auto batch = core::BatchScheduledProbe::decode(
      encoded(core::BatchScheduledProbe{core::StepKind::warmup, 12, ids}, batch_data));
  EXPECT_EQ(batch.step_kind, core::StepKind::warmup);
  EXPECT_EQ(batch.num_tokens, 12);
  EXPECT_EQ(list(batch.request_ids), ids);
  const core::Event request_event = encoded(core::RequestScheduledProbe{5, 3, 8, 2, prompt}, request_data);
  EXPECT_EQ(request_event.value, 5);
  EXPECT_EQ(request_data.ints, (std::vector<int64_t>{3, 8, 2, 40, 41, 42})) << "the layout old traces hold";
  const auto request = core::RequestScheduledProbe::decode(request_event);
  EXPECT_EQ(request.num_computed, 5);
  EXPECT_EQ(request.num_scheduled, 3);
  EXPECT_EQ(request.prefill_len, 8);
  EXPECT_EQ(request.state_index, 2);
  EXPECT_EQ(list(request.prompt), prompt);
}

TEST(Probes, RowProbesRoundTripThroughTheirLayout) {
  core::ProbeData inputs_data, output_data, padding_data;
  const std::vector<int64_t> ids{11, 12};
  const core::Event inputs_event = encoded(core::InputsBuiltProbe{true, 6, ids}, inputs_data);
  EXPECT_EQ(inputs_event.value, 1);
  EXPECT_EQ(inputs_data.ints, (std::vector<int64_t>{6, 11, 12}));
  const auto inputs = core::InputsBuiltProbe::decode(inputs_event);
  EXPECT_TRUE(inputs.decode_row);
  EXPECT_EQ(inputs.first_position, 6);
  EXPECT_EQ(list(inputs.input_ids), ids);
  std::vector<int64_t> rows;
  core::StageOutputRow{6, 0x1234, -5}.append_to(rows);
  core::StageOutputRow{7, 0x99, 42}.append_to(rows);
  const auto output = core::StageOutputProbe::decode(encoded(core::StageOutputProbe{2, 4, 8, rows}, output_data));
  ASSERT_EQ(output.row_count(), 2u);
  EXPECT_EQ(output.layers_done, 2);
  EXPECT_EQ(output.first_lane, 4);
  EXPECT_EQ(output.lanes, 8);
  EXPECT_EQ(output.row(1).position, 7);
  EXPECT_EQ(output.row(1).context_lane, 0x99);
  EXPECT_EQ(output.row(0).deep_hash, -5);
  std::vector<int64_t> pad;
  core::PreparedPaddingRow{0, 0, 1, -1, 0}.append_to(pad);
  core::PreparedPaddingRow{3, 9, 0, 17, 1}.append_to(pad);
  const auto padding = core::PaddingRowsProbe::decode(
      encoded(core::PaddingRowsProbe{core::PaddingKernel::prepare_inputs, 5, pad}, padding_data));
  EXPECT_EQ(padding.first_row, 5);
  ASSERT_EQ(core::PreparedPaddingRow::count(padding), 2u);
  const auto second = core::PreparedPaddingRow::at(padding, 1);
  EXPECT_EQ(second.input_id, 3);
  EXPECT_EQ(second.position, 9);
  EXPECT_EQ(second.slot, 17);
  EXPECT_EQ(second.unwritten, 1);
}

TEST(Probes, FeedbackProbesRoundTripThroughTheirLayout) {
  core::ProbeData adopted_data, sampled_data, gate_data, drafts_data, table_data;
  const std::vector<int64_t> tokens{3, 4}, mask{1, 0, 1};
  const core::Event adopted_event = encoded(core::FeedbackAdoptedProbe{6, 2, 1, tokens}, adopted_data);
  EXPECT_EQ(adopted_data.ints, (std::vector<int64_t>{2, 1, 3, 4}));
  const auto adopted = core::FeedbackAdoptedProbe::decode(adopted_event);
  EXPECT_EQ(adopted.state_index, 6);
  EXPECT_EQ(adopted.num_sampled, 2);
  EXPECT_EQ(adopted.num_rejected, 1);
  EXPECT_EQ(list(adopted.sampled), tokens);
  const auto sampled = core::TokensSampledProbe::decode(encoded(core::TokensSampledProbe{tokens, 3}, sampled_data));
  EXPECT_EQ(list(sampled.tokens), tokens);
  EXPECT_EQ(sampled.num_rejected, 3);
  const auto gate = core::GateProbe::decode(encoded(core::GateProbe{true, mask}, gate_data));
  EXPECT_TRUE(gate.posts_feedback);
  EXPECT_EQ(list(gate.rows), mask);
  const auto drafts = core::DraftsProbe::decode(encoded(core::DraftsProbe{core::EventKind::drafts_adopted, tokens},
                                                        drafts_data, core::EventKind::drafts_adopted));
  EXPECT_EQ(drafts.kind, core::EventKind::drafts_adopted);
  EXPECT_EQ(list(drafts.drafts), tokens);
  const auto table = core::TableBoundProbe::decode(
      encoded(core::TableBoundProbe{core::WeightTable::draft_embed_tokens, 77, 64, 2}, table_data));
  EXPECT_EQ(table.hash, 77);
  EXPECT_EQ(table.entries, 64);
  EXPECT_EQ(table.unwritten, 2);
}

TEST(Probes, AnEventOutsideItsLayoutIsNamedAndNotDecoded) {
  const std::vector<int64_t> two{4, 4};
  core::Event e;
  e.kind = core::EventKind::request_scheduled;
  e.ints = two;
  EXPECT_FALSE(core::probe_layout_ok(e));
  EXPECT_NE(core::probe_layout_error(e).find("holds 2 integers"), std::string::npos) << core::probe_layout_error(e);
  EXPECT_THROW(core::RequestScheduledProbe::decode(e), core::InternalError);
  e.kind = core::EventKind::inputs_built;
  e.value = -1;  // a flag
  EXPECT_EQ(core::probe_value_error(e), "this inputs_built event's value is -1; expected 0 or 1");
  e.kind = core::EventKind::op_posted;
  EXPECT_EQ(core::probe_layout_error(e), "this op_posted event carries integers (2); only engine probes do");
  e.ints = {};
  EXPECT_TRUE(core::probe_layout_ok(e));
}

TEST(Probes, LedgerProbesRoundTripThroughTheirLayout) {
  const std::vector<int64_t> blocks{3, 9}, rows{7, 16, 48, 7, 17, 49};
  core::ProbeData a, f, r, s;
  const auto alloc = core::BlocksAllocatedProbe::decode(encoded(core::BlocksAllocatedProbe{2, blocks}, a));
  EXPECT_EQ(alloc.first_index, 2);
  EXPECT_EQ(list(alloc.blocks), blocks);
  EXPECT_EQ(core::BlocksFreedProbe::decode(encoded(core::BlocksFreedProbe{core::Release::preempted, blocks}, f)).reason,
            core::Release::preempted);
  const auto released =
      core::RequestReleasedProbe::decode(encoded(core::RequestReleasedProbe{core::Release::aborted, 4, blocks}, r));
  EXPECT_EQ(released.state_index, 4);
  EXPECT_EQ(list(released.fenced_blocks), blocks);
  const auto slots = core::KvSlotsProbe::decode(encoded(core::KvSlotsProbe{core::KvWriter::draft_context, rows}, s));
  ASSERT_EQ(slots.row_count(), 2u);
  EXPECT_EQ(slots.row(1).request, 7);
  EXPECT_EQ(slots.row(1).position, 17);
  EXPECT_EQ(slots.row(1).slot, 49);
  EXPECT_EQ(core::to_string(slots.writer), "draft context");
  EXPECT_EQ(core::parse_release("preempted"), core::Release::preempted);
  core::ProbeData sh, ca;
  const auto shared = core::BlocksSharedProbe::decode(encoded(core::BlocksSharedProbe{0, blocks}, sh));
  EXPECT_EQ(shared.first_index, 0);
  EXPECT_EQ(list(shared.blocks), blocks);
  EXPECT_EQ(list(core::BlocksCachedProbe::decode(encoded(core::BlocksCachedProbe{blocks}, ca)).blocks), blocks);
  EXPECT_TRUE(core::is_engine_probe(core::EventKind::blocks_shared));
  EXPECT_TRUE(core::is_engine_probe(core::EventKind::blocks_cached));
}

}  // namespace
}  // namespace ppspec::testing
