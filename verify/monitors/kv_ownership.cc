#include "verify/monitors/kv_ownership.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"

namespace ppspec::verify {

namespace {

std::string_view writer_words(core::KvWriter w) {
  switch (w) {
    case core::KvWriter::target: return "the target's KV write";
    case core::KvWriter::draft_context: return "the drafter's context KV write";
    case core::KvWriter::draft_query: return "the drafter's query row";
    case core::KvWriter::none: break;
  }
  return "a KV write";
}

}  // namespace

// The store a finding is about: the rank's main stream, at the kernel that computed the slot.
core::Site store_site(const core::Event& e, core::KvWriter writer, int64_t position) {
  return core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                    fmt::format("{}: request {} position {} at engine step {}",
                                writer == core::KvWriter::target ? "prepare_inputs" : "prepare_dflash_inputs", e.req, position, e.step),
                    ""};
}

void KvOwnership::on_event(const core::Event& e) {
  if (blocks_.is_ledger(e.kind)) {
    const std::string wrong = blocks_.apply(e);
    if (!wrong.empty())
      report(finding_at(e, core::Verdict::kv_violation, std::string(core::kKindKvOwnership), "the KV block ledger is inconsistent: " + wrong));
    return;
  }
  if (e.kind != core::EventKind::kv_slots || reported(std::string(core::kKindKvOwnership))) return;
  const auto p = core::KvSlotsProbe::decode(e);
  for (size_t i = 0; i < p.row_count(); ++i) check_row(e, p.writer, p.row(i));
}

std::string KvOwnership::whose(const BlockHolder& h) const {
  if (h.req >= 0) return fmt::format("request {} holds it since step {}", h.req, h.since_step);
  if (h.last_req >= 0)
    return fmt::format("it is free: request {} gave it back at step {} ({})", h.last_req, h.since_step, core::to_string(h.reason));
  return "it was never given to any request";
}

void KvOwnership::check_row(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row) {
  const int64_t bs = facts_.block_size;
  const int64_t column = row.position / bs;
  const std::vector<int64_t>* table = blocks_.table(e.req);
  const std::string where = fmt::format("rank{} (stage {}) at step {}: {} for request {} at position {}", e.rank, facts_.stage_of(e.rank),
                                        e.step, writer_words(writer), e.req, row.position);
  if (row.slot < 0) {
    if (writer != core::KvWriter::draft_query && writer != core::KvWriter::target) return;
    core::Finding f = finding_at(e, core::Verdict::kv_violation, std::string(core::kKindKvOutOfTable),
                                 fmt::format("{} has no KV slot: block-table column {} {}", where, column,
                                             table == nullptr || static_cast<size_t>(column) >= table->size()
                                                 ? fmt::format("is past the request's {} blocks", table == nullptr ? 0 : table->size())
                                                 : std::string("holds the null block")));
    f.details.push_back("the engine core reserved no block for this position: a step's slots must cover its tokens and, "
                        "with a drafter, the K lookahead positions its queries use (vLLM #16370)");
    f.sites.push_back(store_site(e, writer, row.position));
    report(std::move(f));
    return;
  }
  const int64_t block = row.slot / bs;
  const BlockHolder now = blocks_.holder(block);
  const BlockHolder judged = now.req == e.req ? now : blocks_.holder_at_return(block, e.step);
  if (judged.req != e.req) {
    core::Finding f = finding_at(e, core::Verdict::kv_violation, std::string(core::kKindKvOwnership),
                                 fmt::format("{} stores into slot {} of block {}, which the request does not hold: {}", where, row.slot,
                                             block, whose(now)));
    f.sites.push_back(store_site(e, writer, row.position));
    if (now.req < 0 && now.last_req == e.req && now.since_step == e.step)
      f.details.push_back(fmt::format("the engine core preempted request {} while it built step {}, yet the request's row stayed "
                                      "in that step: a victim already scheduled must leave the batch (vLLM #28558)",
                                      e.req, e.step));
    else if (now.req < 0 && now.last_req == e.req)
      f.details.push_back(fmt::format("request {} gave the block back while step {} of it was still in flight: its blocks must stay "
                                      "fenced until that step returns (vLLM #45357, #49620)",
                                      e.req, e.step));
    else if (table != nullptr && static_cast<size_t>(column) >= table->size())
      f.details.push_back(fmt::format("the position is past the request's {} blocks: the block-table entry at column {} is left from "
                                      "an earlier request of the same state index (vLLM #16370: no lookahead slots)",
                                      table->size(), column));
    report(std::move(f));
    return;
  }
  if (judged.fenced || table == nullptr || now.req != e.req) return;  // a late store of a released request: its table is gone
  const bool right_column = static_cast<size_t>(column) < table->size() && (*table)[static_cast<size_t>(column)] == block;
  if (right_column && row.slot % bs == row.position % bs) return;
  core::Finding f = finding_at(
      e, core::Verdict::kv_violation, std::string(core::kKindKvOwnership),
      fmt::format("{} stores into slot {} (block {}, offset {}), but its block table puts position {} in {} at offset {}", where,
                  row.slot, block, row.slot % bs, row.position,
                  static_cast<size_t>(column) < table->size() ? fmt::format("block {}", (*table)[static_cast<size_t>(column)])
                                                              : fmt::format("no block (column {} of {})", column, table->size()),
                  row.position % bs));
  f.sites.push_back(store_site(e, writer, row.position));
  report(std::move(f));
}

}  // namespace ppspec::verify
