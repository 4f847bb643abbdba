#include "verify/monitors/padding_checker.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "kernels/row.h"
#include "kernels/write_check.h"

namespace ppspec::verify {

void PaddingChecker::on_event(const core::Event& e) {
  if (reported(core::FindingKind::padding) || e.kind != core::EventKind::padding_rows) return;
  const auto padding = core::PaddingRowsProbe::decode(e);
  if (padding.kernel == core::PaddingKernel::topk_softplus_sqrt)
    check_router(e, padding);
  else
    check_inputs(e, padding);
}

namespace {

// One padding row as the prepare kernel left it, and its row index.
struct PadRow {
  int64_t row, id, position, is_padding, slot, unwritten;
  PadRow(int64_t index, const core::PreparedPaddingRow& r)
      : row(index),
        id(r.input_id),
        position(r.position),
        is_padding(r.is_padding),
        slot(r.slot),
        unwritten(r.unwritten) {}
  // A never-written slot holds the allocation's poison (0xA5 bytes): no kernel ever stored it.
  bool never_written_slot() const { return static_cast<uint64_t>(slot) == kernels::kPoisonDoubleWord; }
  bool inert() const {
    return id == 0 && position == 0 && is_padding == 1 && slot == kernels::kPadSlot && unwritten == 0;
  }
  std::string wrong() const {
    std::vector<std::string> w;
    if (id != 0) w.push_back(fmt::format("input id {} (expected 0)", id));
    if (position != 0) w.push_back(fmt::format("position {} (expected 0)", position));
    if (is_padding != 1) w.push_back("is_padding unset");
    if (slot != kernels::kPadSlot)
      w.push_back(fmt::format("slot {} (expected PAD {}{})", slot, kernels::kPadSlot,
                              never_written_slot() ? "; never written: the allocation's poison" : ""));
    if (unwritten != 0)
      w.push_back("not stored by the kernel this step: the graph reads stale or never-written memory");
    PPSPEC_ASSERT(!w.empty(), "padding row {} is inert", row);
    return fmt::format("{}", fmt::join(w, ", "));
  }
};

// What the wrong rows say about the kernel, from their values: which rows, and what is in them.
std::string padding_hint(const std::vector<PadRow>& bad, int64_t first_pad, int64_t last_pad, std::string_view kernel) {
  PPSPEC_ASSERT(!bad.empty() && first_pad <= bad.front().row && bad.back().row <= last_pad,
                "{} wrong rows outside the padding rows {}..{}", bad.size(), first_pad, last_pad);
  const bool all_unstored = std::all_of(bad.begin(), bad.end(), [](const PadRow& r) { return r.unwritten != 0; });
  const bool only_last = bad.size() == 1 && bad.front().row == last_pad && last_pad > first_pad;
  const bool ramp =
      std::all_of(bad.begin(), bad.end(), [](const PadRow& r) { return r.position == r.row && r.unwritten == 0; });
  const bool pad_slot_only = std::all_of(bad.begin(), bad.end(), [](const PadRow& r) {
    return r.unwritten == 0 && r.slot != kernels::kPadSlot && r.id == 0 && r.position == 0 && r.is_padding == 1;
  });
  if (only_last)
    return fmt::format(
        "only the last padding row (row {}) is wrong, the others are inert: {}'s bound over the padding "
        "rows stops one short (an off-by-one)",
        last_pad, kernel);
  if (all_unstored && bad.size() == static_cast<size_t>(last_pad - first_pad + 1)) {
    // A never-written element holds the allocation's poison (0xA5 bytes).
    const bool poison = static_cast<uint32_t>(bad.front().id) == kernels::kPoisonWord;
    return fmt::format(
        "{} stored none of the padding rows this step: row {} holds {} (input id {}, position {}, slot {})", kernel,
        bad.front().row, poison ? "the allocation's poison: no kernel ever wrote it" : "what an earlier batch left",
        bad.front().id, bad.front().position, bad.front().slot);
  }
  if (pad_slot_only && std::all_of(bad.begin(), bad.end(), [](const PadRow& r) { return r.never_written_slot(); }))
    return fmt::format(
        "the rows are cleared but for their slot, which no kernel ever wrote: it holds the allocation's poison "
        "({:#x}), an index past every KV cache, so a padding row's KV write faults or lands outside the cache; {} "
        "does not store the slot of padding rows, and PAD ({}) is the slot no kernel writes",
        kernels::kPoisonDoubleWord, kernel, kernels::kPadSlot);
  if (pad_slot_only)
    return fmt::format(
        "the rows are cleared but for their slot ({}): a padding row's KV write lands in that slot, which a "
        "real request's block may own; PAD ({}) is the slot no kernel writes",
        bad.front().slot, kernels::kPadSlot);
  if (ramp)
    return "each padding row's position is its row index: the kernel writes a ramp over the padding rows where it must "
           "write 0 (positions of padding rows feed rotary and the drafter's context)";
  return fmt::format("{} of the padding rows are wrong: the kernel clears some fields of its padding rows, not all",
                     bad.size());
}

}  // namespace

void PaddingChecker::check_inputs(const core::Event& e, const core::PaddingRowsProbe& padding) {
  const size_t rows = core::PreparedPaddingRow::count(padding);
  const int64_t first = padding.first_row;
  std::vector<PadRow> bad;
  for (size_t i = 0; i < rows; ++i) {
    const PadRow row{first + static_cast<int64_t>(i), core::PreparedPaddingRow::at(padding, i)};
    if (!row.inert()) bad.push_back(row);
  }
  if (bad.empty()) return;
  PPSPEC_ASSERT(bad.size() <= rows);
  const std::string_view kernel = core::to_string(padding.kernel);
  const int64_t last = first + static_cast<int64_t>(rows) - 1;
  core::Finding f =
      finding_at(e, core::Verdict::padding_violation, core::FindingKind::padding,
                 fmt::format("rank{} {}: padding row {} has {}", e.rank, kernel, bad.front().row, bad.front().wrong()));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("{}: rows {}..{} pad a batch of {} rows", kernel, first, last, first), ""});
  f.details.push_back(padding_hint(bad, first, last, kernel));
  f.details.push_back(
      fmt::format("a graph replayed at {} rows reads every row (R10); the prepare kernel must clear "
                  "rows {}..{}: id 0, position 0, is_padding, slot PAD",
                  last + 1, first, last));
  report(std::move(f));
}

namespace {

// What a padding row's selection says about the router: it scored the row, or masked only part.
std::string router_hint(const std::vector<int64_t>& ids, int64_t nonzero) {
  const bool any_id = std::any_of(ids.begin(), ids.end(), [](int64_t id) { return id != -1; });
  PPSPEC_ASSERT(any_id || nonzero != 0, "a hint for an inert router row");
  if (any_id && nonzero > 0)
    return "the router scored the padding row like a real one (experts and weights): it does not read is_padding, so a "
           "padding row loads experts and reads gating values nothing wrote (#56598)";
  if (any_id)
    return "the weights are zeroed but expert ids are selected: the router masks the weights of padding rows, not "
           "their "
           "ids, so the experts still load";
  return "no expert is selected but a weight is non-zero: the router masks the ids of padding rows, not their weights";
}

}  // namespace

void PaddingChecker::check_router(const core::Event& e, const core::PaddingRowsProbe& padding) {
  const auto topk = static_cast<size_t>(facts_.topk);
  const size_t rows = core::RouterPaddingRow::count(padding, topk);
  const int64_t first = padding.first_row;
  // The probe does not carry topk, so the trace reader cannot check the rows' width: a row cut
  // short (a trace written by hand, or by another model) is reported, not dropped.
  if (padding.fields.size() % (topk + 1) != 0) {
    report(finding_at(
        e, core::Verdict::padding_violation, core::FindingKind::padding,
        fmt::format("rank{} topk_softplus_sqrt: the padding rows hold {} fields, not whole rows of topk + 1 = {} "
                    "(expert ids, then the count of non-zero weights)",
                    e.rank, padding.fields.size(), topk + 1)));
    return;
  }
  for (size_t i = 0; i < rows; ++i) {
    const core::RouterPaddingRow r = core::RouterPaddingRow::at(padding, i, topk);
    std::vector<int64_t> ids(r.expert_ids.begin(), r.expert_ids.end());
    const int64_t nonzero = r.nonzero_weights;
    bool ok = nonzero == 0;
    for (int64_t id : ids) ok = ok && id == -1;
    if (ok) continue;
    const int64_t row = first + static_cast<int64_t>(i);
    core::Finding f = finding_at(
        e, core::Verdict::padding_violation, core::FindingKind::padding,
        fmt::format("rank{} topk_softplus_sqrt: padding row {} selects experts {} with {} non-zero weight(s); a "
                    "padding row must select none (id -1, weight 0)",
                    e.rank, row, token_list(ids), nonzero));
    f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                                 fmt::format("drafter router: rows {}..{} pad {} query rows", first,
                                             first + static_cast<int64_t>(rows) - 1, first),
                                 ""});
    f.details.push_back(router_hint(ids, nonzero));
    report(std::move(f));
    return;
  }
}

}  // namespace ppspec::verify
