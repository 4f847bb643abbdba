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

// A store's finding is about the request of its row; the kernel's event names no request.
core::Finding kv_finding(const core::Event& e, const core::KvSlotRow& row, core::FindingKind kind,
                         std::string summary) {
  core::Finding f = finding_at(e, core::Verdict::kv_violation, kind, std::move(summary));
  f.request = row.request;
  return f;
}

}  // namespace

// The store a finding is about: the rank's main stream, at the kernel that computed the slot.
core::Site store_site(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row) {
  return core::Site{e.rank,
                    fmt::format("rank{}.main", e.rank),
                    "",
                    -1,
                    fmt::format("{}: request {} position {} at engine step {}",
                                writer == core::KvWriter::target ? "prepare_inputs" : "prepare_dflash_inputs",
                                row.request, row.position, e.step),
                    ""};
}

void KvOwnership::on_event(const core::Event& e) {
  if (blocks_.is_ledger(e.kind)) {
    const std::string wrong = blocks_.apply(e);
    if (!wrong.empty())
      report(finding_at(e, core::Verdict::kv_violation, core::FindingKind::kv_ownership,
                        "the KV block ledger is inconsistent: " + wrong));
    return;
  }
  if (e.kind != core::EventKind::kv_slots || reported(core::FindingKind::kv_ownership)) return;
  const auto p = core::KvSlotsProbe::decode(e);
  for (size_t i = 0; i < p.row_count(); ++i) check_row(e, p.writer, p.row(i));
}

std::string KvOwnership::whose(const BlockHolder& h) const {
  if (h.req >= 0) return fmt::format("request {} holds it since step {}", h.req, h.since_step);
  if (h.last_req >= 0)
    return fmt::format("it is free: request {} gave it back at step {} ({})", h.last_req, h.since_step,
                       core::to_string(h.reason));
  return "it was never given to any request";
}

void KvOwnership::check_row(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row) {
  const int64_t bs = facts_.block_size;
  const int64_t column = row.position / bs;
  const std::vector<int64_t>* table = blocks_.table(row.request);
  if (row.slot < 0) {
    if (writer == core::KvWriter::draft_context) return;  // a rejected row stores nothing, by design
    report_out_of_table(e, writer, row, table);
    return;
  }
  const int64_t block = row.slot / bs;
  // A block shared through the prefix cache is read-only to the request that hit it (a store of
  // a step from before the hit is judged as any store by who owned the block then).
  if (const BlockHolder* s = blocks_.sharer(block, row.request); s != nullptr && e.step >= s->since_step) {
    report_shared(e, writer, row, s->since_step);
    return;
  }
  const BlockHolder now = blocks_.holder(block);
  const BlockHolder judged = now.req == row.request ? now : blocks_.holder_at_return(block, e.step);
  if (judged.req != row.request) {
    report_not_held(e, writer, row, now, table);
    return;
  }
  if (judged.fenced || table == nullptr || now.req != row.request)
    return;  // a late store of a released request: its table is gone
  // Its own block, but given at a later schedule than the store's step, which is still in flight:
  // under the lookahead batch the engine core schedules step S + 1, and gives blocks for it, while
  // step S runs, and step S's positions lie in blocks given by S. (A rank finishing a step that
  // returned already stores into blocks its resumed request may hold again: its resumption's
  // prefill rewrites them later in the rank's stream.)
  if (now.since_step > e.step) {
    if (!blocks_.returned(e.step)) {
      report_given_later(e, writer, row, now);
      return;
    }
    // A rank still finishing a step that returned before its request was released (preempted) and
    // admitted again stores by the table of that earlier admission, which is gone: judged by who
    // held the block at the return (the block was given again after the release, so after the step).
    if (blocks_.released_at(row.request) > e.step) {
      if (blocks_.holder_at_return(block, e.step).req != row.request) report_not_held(e, writer, row, now, table);
      return;
    }
  }
  // Its own block, cached at an earlier step: its content is final (others may share it).
  if (const CachedBlock* c = blocks_.cached(block); c != nullptr && e.step > c->step) {
    report_cached(e, writer, row, *c);
    return;
  }
  const bool right_column =
      static_cast<size_t>(column) < table->size() && (*table)[static_cast<size_t>(column)] == block;
  if (right_column && row.slot % bs == row.position % bs) return;
  report_wrong_slot(e, writer, row, *table);
}

std::string KvOwnership::where(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row) const {
  return fmt::format("rank{} (stage {}) at step {}: {} for request {} at position {}", e.rank, facts_.stage_of(e.rank),
                     e.step, writer_words(writer), row.request, row.position);
}

void KvOwnership::report_out_of_table(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                      const std::vector<int64_t>* table) {
  const int64_t column = row.position / facts_.block_size;
  const size_t held = table == nullptr ? 0 : table->size();
  core::Finding f =
      kv_finding(e, row, core::FindingKind::kv_out_of_table,
                 fmt::format("{} has no KV slot: block-table column {} {}", where(e, writer, row), column,
                             static_cast<size_t>(column) >= held ? fmt::format("is past the request's {} blocks", held)
                                                                 : std::string("holds the null block")));
  f.details.push_back(
      "the engine core reserved no block for this position: a step's slots must cover its tokens and, "
      "with a drafter, the K lookahead positions its queries use (vLLM #16370)");
  f.sites.push_back(store_site(e, writer, row));
  report(std::move(f));
}

void KvOwnership::report_not_held(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                  const BlockHolder& now, const std::vector<int64_t>* table) {
  const int64_t block = row.slot / facts_.block_size;
  const int64_t column = row.position / facts_.block_size;
  core::Finding f = kv_finding(e, row, core::FindingKind::kv_ownership,
                               fmt::format("{} stores into slot {} of block {}, which the request does not hold: {}",
                                           where(e, writer, row), row.slot, block, whose(now)));
  f.sites.push_back(store_site(e, writer, row));
  // Released at the schedule of this very step: the row outlived its request's preemption (its
  // blocks freed at once, or fenced for an earlier step in flight and perhaps reused since).
  if (blocks_.released_at(row.request) == e.step)
    f.details.push_back(
        fmt::format("the engine core preempted request {} while it built step {}, yet the request's row stayed "
                    "in that step: a victim already scheduled must leave the batch (vLLM #28558)",
                    row.request, e.step));
  else if (now.req < 0 && now.last_req == row.request)
    f.details.push_back(
        fmt::format("request {} gave the block back while step {} of it was still in flight: its blocks must stay "
                    "fenced until that step returns (vLLM #45357, #49620)",
                    row.request, e.step));
  else if (table != nullptr && static_cast<size_t>(column) >= table->size())
    f.details.push_back(
        fmt::format("the position is past the request's {} blocks: the block-table entry at column {} is left from "
                    "an earlier request of the same state index (vLLM #16370: no lookahead slots)",
                    table->size(), column));
  report(std::move(f));
}

void KvOwnership::report_given_later(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                     const BlockHolder& now) {
  const int64_t block = row.slot / facts_.block_size;
  core::Finding f = kv_finding(
      e, row, core::FindingKind::kv_ownership,
      fmt::format("{} stores into slot {} of block {}, which the request receives only at step {}, scheduled while "
                  "step {} was in flight",
                  where(e, writer, row), row.slot, block, now.since_step, e.step));
  f.sites.push_back(store_site(e, writer, row));
  f.details.push_back(
      fmt::format("a step's stores go into the blocks its request held when the step was scheduled; block {} was "
                  "given for step {}'s tokens: step {} computed a position past what it scheduled, or took its slot "
                  "mapping from a newer block table",
                  block, now.since_step, e.step));
  report(std::move(f));
}

std::string KvOwnership::sharing(int64_t block) const {
  const size_t n = blocks_.sharers(block);
  const BlockHolder owner = blocks_.holder(block);
  const std::string owns = owner.req >= 0 ? fmt::format(", request {} owns it", owner.req) : std::string();
  if (n == 0) return "no other request shares it yet" + owns;
  return fmt::format("{} request{} share{} it{}", n, n == 1 ? "" : "s", n == 1 ? "s" : "", owns);
}

void KvOwnership::report_shared(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                int64_t hit_step) {
  const int64_t block = row.slot / facts_.block_size;
  const CachedBlock* c = blocks_.cached(block);
  core::Finding f =
      kv_finding(e, row, core::FindingKind::kv_ownership,
                 fmt::format("{} stores into slot {} of block {}, which the request holds read-only: it shares it "
                             "through the prefix cache since step {} ({}{})",
                             where(e, writer, row), row.slot, block, hit_step, sharing(block),
                             c != nullptr ? fmt::format("; request {} computed it, cached at step {}", c->req, c->step)
                                          : std::string()));
  f.sites.push_back(store_site(e, writer, row));
  f.details.push_back(
      "a request's prefill starts after its prefix-cache hit: the hit must leave at least one token to compute in "
      "a block of its own (vLLM caps it at num_tokens - 1; #11186 recomputed the last token of a prompt hit "
      "whole into its last, shared block)");
  report(std::move(f));
}

void KvOwnership::report_cached(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                const CachedBlock& c) {
  const int64_t block = row.slot / facts_.block_size;
  core::Finding f =
      kv_finding(e, row, core::FindingKind::kv_ownership,
                 fmt::format("{} stores into slot {} of block {}, which entered the prefix cache at step {} ({}): its "
                             "content was final",
                             where(e, writer, row), row.slot, block, c.step, sharing(block)));
  f.sites.push_back(store_site(e, writer, row));
  f.details.push_back(
      "only tokens computed and verified may be cached (vLLM caches min(num_computed + num_new_tokens, "
      "num_tokens)): a block holding a position that a later step stores was cached too early");
  report(std::move(f));
}

void KvOwnership::report_wrong_slot(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                                    const std::vector<int64_t>& table) {
  const int64_t bs = facts_.block_size;
  const auto column = static_cast<size_t>(row.position / bs);
  core::Finding f = kv_finding(
      e, row, core::FindingKind::kv_ownership,
      fmt::format(
          "{} stores into slot {} (block {}, offset {}), but its block table puts position {} in {} at offset {}",
          where(e, writer, row), row.slot, row.slot / bs, row.slot % bs, row.position,
          column < table.size() ? fmt::format("block {}", table[column])
                                : fmt::format("no block (column {} of {})", column, table.size()),
          row.position % bs));
  f.sites.push_back(store_site(e, writer, row));
  report(std::move(f));
}

}  // namespace ppspec::verify
