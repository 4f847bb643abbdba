#include "verify/padding_checker.h"

#include <fmt/format.h>

#include "kernels/row.h"

namespace ppspec::verify {

void PaddingChecker::on_event(const core::Event& e) {
  if (reported("padding") || e.kind != core::EventKind::padding_rows) return;
  if (e.subject.padding_kernel == core::PaddingKernel::topk_softplus_sqrt)
    check_router(e);
  else
    check_inputs(e);
}

void PaddingChecker::check_inputs(const core::Event& e) {
  // Per row: input id, position, is_padding, slot, never written.
  constexpr size_t kFields = 5;
  const size_t rows = e.ints.size() / kFields;
  for (size_t i = 0; i < rows; ++i) {
    const auto* r = &e.ints[i * kFields];
    std::vector<std::string> wrong;
    if (r[0] != 0) wrong.push_back(fmt::format("input id {} (expected 0)", r[0]));
    if (r[1] != 0) wrong.push_back(fmt::format("position {} (expected 0)", r[1]));
    if (r[2] != 1) wrong.push_back("is_padding unset");
    if (r[3] != kernels::kPadSlot) wrong.push_back(fmt::format("slot {} (expected PAD {})", r[3], kernels::kPadSlot));
    if (r[4] != 0) wrong.push_back("not stored by the kernel this step: the graph reads stale or never-written memory");
    if (wrong.empty()) continue;
    const int64_t row = e.value + static_cast<int64_t>(i);
    std::string what;
    for (const auto& w : wrong) what += (what.empty() ? "" : ", ") + w;
    core::Finding f = finding_at(e, core::Verdict::padding_violation, "padding",
                                 fmt::format("rank{} {}: padding row {} has {}", e.rank, core::to_string(e.subject.padding_kernel), row, what));
    f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                                 fmt::format("{}: rows {}..{} pad a batch of {} rows", core::to_string(e.subject.padding_kernel), e.value,
                                             e.value + static_cast<int64_t>(rows) - 1, e.value),
                                 ""});
    f.details.push_back(fmt::format("a graph replayed at {} rows reads every row (R10); the prepare kernel must clear "
                                    "rows {}..{}: id 0, position 0, is_padding, slot PAD",
                                    e.value + static_cast<int64_t>(rows), e.value, e.value + static_cast<int64_t>(rows) - 1));
    report(std::move(f));
    return;
  }
}

void PaddingChecker::check_router(const core::Event& e) {
  // Per row: the `topk` expert ids it selected, then how many of its weights are non-zero.
  const size_t fields = static_cast<size_t>(facts_.topk) + 1;
  const size_t rows = e.ints.size() / fields;
  for (size_t i = 0; i < rows; ++i) {
    const auto* r = &e.ints[i * fields];
    std::vector<int64_t> ids(r, r + facts_.topk);
    const int64_t nonzero = r[facts_.topk];
    bool ok = nonzero == 0;
    for (int64_t id : ids) ok = ok && id == -1;
    if (ok) continue;
    const int64_t row = e.value + static_cast<int64_t>(i);
    core::Finding f = finding_at(
        e, core::Verdict::padding_violation, "padding",
        fmt::format("rank{} topk_softplus_sqrt: padding row {} selects experts {} with {} non-zero weight(s); a "
                    "padding row must select none (id -1, weight 0)",
                    e.rank, row, token_list(ids), nonzero));
    f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                                 fmt::format("drafter router: rows {}..{} pad {} query rows", e.value,
                                             e.value + static_cast<int64_t>(rows) - 1, e.value),
                                 ""});
    f.details.push_back("the router must honour is_padding: otherwise padding rows load experts and read gating values "
                        "nothing wrote (#56598)");
    report(std::move(f));
    return;
  }
}

}  // namespace ppspec::verify
