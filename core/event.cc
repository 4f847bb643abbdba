#include "core/event.h"

#include <fmt/format.h>

namespace ppspec::core {

std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::actor_start: return "actor_start";
    case EventKind::actor_end: return "actor_end";
    case EventKind::comm_init: return "comm_init";
    case EventKind::op_posted: return "op_posted";
    case EventKind::op_paired: return "op_paired";
    case EventKind::op_started: return "op_started";
    case EventKind::op_completed: return "op_completed";
    case EventKind::kernel_launched: return "kernel_launched";
    case EventKind::kernel_completed: return "kernel_completed";
    case EventKind::module_load: return "module_load";
    case EventKind::sync_begin: return "sync_begin";
    case EventKind::sync_end: return "sync_end";
    case EventKind::note: return "note";
    case EventKind::op_pending: return "op_pending";
    case EventKind::actor_blocked: return "actor_blocked";
    case EventKind::batch_scheduled: return "batch_scheduled";
    case EventKind::inputs_built: return "inputs_built";
    case EventKind::tokens_sampled: return "tokens_sampled";
    case EventKind::drafts_proposed: return "drafts_proposed";
    case EventKind::drafts_adopted: return "drafts_adopted";
    case EventKind::warmup_phase: return "warmup_phase";
    case EventKind::padding_rows: return "padding_rows";
    case EventKind::gate: return "gate";
    case EventKind::table_bound: return "table_bound";
    case EventKind::request_scheduled: return "request_scheduled";
    case EventKind::feedback_adopted: return "feedback_adopted";
    case EventKind::stage_output: return "stage_output";
    case EventKind::blocks_allocated: return "blocks_allocated";
    case EventKind::blocks_freed: return "blocks_freed";
    case EventKind::request_released: return "request_released";
    case EventKind::kv_slots: return "kv_slots";
    case EventKind::serving_ended: return "serving_ended";
    case EventKind::abort_arrived: return "abort_arrived";
    case EventKind::step_returned: return "step_returned";
    case EventKind::bonus_adopted: return "bonus_adopted";
    case EventKind::blocks_shared: return "blocks_shared";
    case EventKind::blocks_cached: return "blocks_cached";
    case EventKind::draft_budget: return "draft_budget";
    case EventKind::accepted_readback: return "accepted_readback";
    case EventKind::table_updated: return "table_updated";
    case EventKind::kv_exported: return "kv_exported";
    case EventKind::kv_sent: return "kv_sent";
    case EventKind::kv_pulled: return "kv_pulled";
    case EventKind::kv_ready: return "kv_ready";
    case EventKind::attention_split: return "attention_split";
    case EventKind::eagle_taps: return "eagle_taps";
    case EventKind::engine_stalled: return "engine_stalled";
    case EventKind::verdict: return "verdict";
  }
  return "?";
}

bool is_engine_probe(EventKind k) {
  switch (k) {
    case EventKind::batch_scheduled:
    case EventKind::inputs_built:
    case EventKind::tokens_sampled:
    case EventKind::drafts_proposed:
    case EventKind::drafts_adopted:
    case EventKind::warmup_phase:
    case EventKind::padding_rows:
    case EventKind::gate:
    case EventKind::table_bound:
    case EventKind::request_scheduled:
    case EventKind::feedback_adopted:
    case EventKind::stage_output:
    case EventKind::blocks_allocated:
    case EventKind::blocks_freed:
    case EventKind::request_released:
    case EventKind::kv_slots:
    case EventKind::serving_ended:
    case EventKind::abort_arrived:
    case EventKind::step_returned:
    case EventKind::bonus_adopted: return true;
    case EventKind::blocks_shared:
    case EventKind::blocks_cached:
    case EventKind::draft_budget: return true;
    case EventKind::accepted_readback:
    case EventKind::table_updated:
    case EventKind::kv_exported:
    case EventKind::kv_sent:
    case EventKind::kv_pulled:
    case EventKind::kv_ready:
    case EventKind::attention_split: return true;
    case EventKind::eagle_taps:
    case EventKind::engine_stalled: return true;
    case EventKind::actor_start:
    case EventKind::actor_end:
    case EventKind::comm_init:
    case EventKind::op_posted:
    case EventKind::op_paired:
    case EventKind::op_started:
    case EventKind::op_completed:
    case EventKind::kernel_launched:
    case EventKind::kernel_completed:
    case EventKind::module_load:
    case EventKind::sync_begin:
    case EventKind::sync_end:
    case EventKind::note:
    case EventKind::op_pending:
    case EventKind::actor_blocked:
    case EventKind::verdict: return false;
  }
  return false;
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        else
          out.push_back(c);
    }
  }
  out.push_back('"');
}

std::string_view text_of(const Event& e) {
  switch (e.kind) {
    case EventKind::warmup_phase: return to_string(e.subject.phase);
    case EventKind::padding_rows: return to_string(e.subject.padding_kernel);
    case EventKind::table_bound: return to_string(e.subject.table);
    case EventKind::batch_scheduled: return to_string(e.subject.step_kind);
    case EventKind::blocks_freed:
    case EventKind::request_released: return to_string(e.subject.release);
    case EventKind::kv_slots: return to_string(e.subject.kv_writer);
    default: return e.text;
  }
}

std::string to_json(const Event& e) {
  std::string s;
  s.reserve(192);
  s += fmt::format("{{\"seq\":{},\"t\":{},\"ev\":\"{}\"", e.seq, e.t, to_string(e.kind));
  if (e.rank >= 0) s += fmt::format(",\"rank\":{}", e.rank);
  auto field = [&s](std::string_view key, std::string_view value) {
    if (value.empty()) return;
    s += ",\"";
    s += key;
    s += "\":";
    append_json_string(s, value);
  };
  field("actor", e.actor);
  field("comm", e.comm);
  if (e.op_id >= 0) s += fmt::format(",\"op_id\":{}", e.op_id);
  if (e.cseq >= 0) s += fmt::format(",\"cseq\":{}", e.cseq);
  if (e.has_op) {
    s += fmt::format(",\"op\":\"{}\",\"dtype\":\"{}\",\"count\":{}", to_string(e.op.kind), to_string(e.op.dtype),
                     e.op.count);
    if (e.op.cols != 1) s += fmt::format(",\"cols\":{}", e.op.cols);
    if (e.op.peer >= 0) s += fmt::format(",\"{}\":{}", has_root(e.op.kind) ? "root" : "peer", e.op.peer);
    field("label", e.op.label.name);
    if (e.op.label.step >= 0) s += fmt::format(",\"step\":{}", e.op.label.step);
    if (e.op.captured) s += ",\"captured\":true";
  }
  field("kernel", e.kernel);
  field("spec", e.spec);
  field("text", text_of(e));
  if (e.value >= 0) s += fmt::format(",\"value\":{}", e.value);
  if (e.req != -1) s += fmt::format(",\"req\":{}", e.req);  // warmup's synthetic requests are -2, -3, ...
  if (e.step >= 0) s += fmt::format(",\"step\":{}", e.step);
  if (!e.ints.empty()) {
    s += ",\"ints\":[";
    for (size_t i = 0; i < e.ints.size(); ++i) s += fmt::format("{}{}", i ? "," : "", e.ints[i]);
    s += ']';
  }
  s += '}';
  return s;
}

}  // namespace ppspec::core
