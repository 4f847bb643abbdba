#include "verify/monitors/leak_checker.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

namespace {

// The engine core, which holds what leaked; and stage 0's first rank, which runs the request's steps.
void leak_sites(core::Finding& f, int64_t req, int64_t step) {
  f.request = req;
  f.sites.push_back(core::Site{0, "rank0.main", "", -1, fmt::format("request {} at engine step {}", req, step), ""});
  f.sites.push_back(core::Site{-1, "engine", "", -1, "the engine core's scheduler", ""});
}

}  // namespace

void LeakChecker::on_event(const core::Event& e) {
  if (blocks_.is_ledger(e.kind)) {
    blocks_.apply(e);  // the KV ownership monitor reports an inconsistent ledger
    if (e.kind == core::EventKind::request_released) aborted_at_.erase(e.req);
    return;
  }
  switch (e.kind) {
    case core::EventKind::abort_arrived: aborted_at_.emplace(e.req, e.step); return;
    case core::EventKind::batch_scheduled: check_batch(e); return;
    case core::EventKind::serving_ended: check_end(e); return;
    default: return;
  }
}

void LeakChecker::check_batch(const core::Event& e) {
  if (aborted_at_.empty() || reported(core::FindingKind::abort_ignored)) return;
  for (int64_t req : core::BatchScheduledProbe::decode(e).request_ids) {
    const auto it = aborted_at_.find(req);
    if (it == aborted_at_.end()) continue;
    const std::vector<int64_t>* table = blocks_.table(req);
    core::Finding f =
        finding_at(e, core::Verdict::leak, core::FindingKind::abort_ignored,
                   fmt::format("request {} was aborted at step {}, yet the engine core scheduled it again at step {}, "
                               "holding {} KV blocks",
                               req, it->second, e.step, table == nullptr ? 0 : table->size()));
    f.details.push_back(
        "the abort did not reach the request where it was: an abort must be looked for in every batch in "
        "flight, not only the current micro-batch (SGLang #29405)");
    leak_sites(f, req, e.step);
    report(std::move(f));
    return;
  }
}

void LeakChecker::check_end(const core::Event& e) {
  // A free block of the prefix cache is held by nobody: it stays cached until it is given again.
  if (blocks_.held_count() > 0) {
    const auto [block, h] = blocks_.first_held();
    core::Finding f =
        finding_at(e, core::Verdict::leak, core::FindingKind::blocks_leaked,
                   fmt::format("serving ended with {} KV blocks still held; the first, block {}, by request {}{}{}",
                               blocks_.held_count(), block, h.req, h.shared ? " (shared through the prefix cache)" : "",
                               h.fenced ? " after its release (fenced for a step that never returned)" : ""));
    leak_sites(f, h.req, h.since_step);
    report(std::move(f));
  }
  if (!blocks_.unreleased().empty()) {
    const auto& [req, since] = *blocks_.unreleased().begin();
    core::Finding f =
        finding_at(e, core::Verdict::leak, core::FindingKind::request_leaked,
                   fmt::format("serving ended with {} requests never released; the first, request {}, got its first "
                               "blocks at step {}",
                               blocks_.unreleased().size(), req, since));
    leak_sites(f, req, since);
    report(std::move(f));
  }
}

}  // namespace ppspec::verify
