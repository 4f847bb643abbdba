// Watcher's verdicts: at a stall and at the end.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "core/finding_kinds.h"
#include "watch/watcher.h"

namespace ppspec::watch {
namespace {

bool is_mismatch(const core::Finding& f) {
  return f.kind == core::FindingKind::collective_mismatch || f.kind == core::FindingKind::p2p_mismatch;
}

void decide(core::RunResult& r) { r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict; }

}  // namespace

core::RunResult Watcher::result() const { return judge(/*live=*/false); }

core::RunResult Watcher::judge(bool live) const {
  const traces::ProfilerJob::Counts& n = job_.counts();
  if (n.posted == 0 && n.held == 0 && n.unmodelled == 0 && n.captured == 0) {
    // Lines came and none could be read: what they were is the answer, not the plugin's loading.
    if (dropped_ > 0)
      throw core::InputError(
          "", 0,
          fmt::format("no NCCL operation could be read: {} line(s) dropped, nothing to check; the first "
                      "reason: {}",
                      dropped_, drop_reasons_.front()));
    throw core::InputError(
        "", 0,
        "no NCCL operation was recorded: nothing to check (did NCCL load the plugin? NCCL_DEBUG=INFO says so; "
        "NCCL tells a profiler nothing of a one-rank communicator's collectives)");
  }
  core::RunResult fr;
  if (!window_.empty()) fr = window_.analyse();
  std::vector<core::Finding> paired = pairing_.mismatches();
  for (core::Finding& f : pairing_.open_mismatches()) paired.push_back(std::move(f));
  core::RunResult r;
  // A misalignment is what was reported as it was posted: pairing judged it on what the members had
  // posted by then, as the simulator does, before a rank's later calls (or its stopping) could make a
  // healthy operation look like the odd one. check's view of the whole window takes its place where
  // both blame the same rank (its words say more: an extra call, a skipped one), else follows as a note.
  if (!paired.empty()) {
    const bool same_blame = !fr.findings.empty() && is_mismatch(fr.findings.front()) &&
                            paired.front().culprit.rank >= 0 &&
                            fr.findings.front().culprit.rank == paired.front().culprit.rank &&
                            fr.findings.front().culprit.comm == paired.front().culprit.comm;
    if (same_blame) std::swap(paired.front(), fr.findings.front());
    r.findings = std::move(paired);
    r.notes = std::move(fr.notes);
    for (core::Finding& f : fr.findings)
      if (is_mismatch(f)) r.notes.push_back(std::move(f));
  } else {
    r = std::move(fr);
  }
  decide(r);
  never_launched(r);
  incomplete(r, live);
  if (n.calls_only > 0) {
    core::Finding note;
    note.verdict = core::Verdict::pass;
    note.kind = core::FindingKind::calls_only;
    note.time = core::kNoTime;
    note.summary = fmt::format(
        "{} rank(s) recorded calls only (PPSPEC_PROFILER_EVENTS=calls): their operations were taken as completed, "
        "so a stall there cannot be told, only a misalignment",
        n.calls_only);
    r.notes.push_back(std::move(note));
  }
  r.stats.ops_posted = n.posted;
  r.stats.pairs = pairing_.pairs();
  r.stats.sim_time = job_.last_time();
  return r;
}

// Calls NCCL never built into tasks: what waits for them waits forever. They are the job's cause
// unless a misalignment or a cycle of waits among operations explains it: an operation check
// would call never posted by a rank whose calls wait here, a frontier that stalls for no reason of
// order, or a cycle that names no operation (check sees those ranks only up to their waiting
// call) follows from calls NCCL never launched.
void Watcher::never_launched(core::RunResult& r) const {
  const std::vector<traces::ProfilerJob::Held> held = job_.held();
  if (held.empty()) return;
  bool first = r.findings.empty();
  if (!first) {
    const core::Finding& f = r.findings.front();
    const bool holds_culprit =
        std::any_of(held.begin(), held.end(), [&](const auto& h) { return h.rank == f.culprit.rank; });
    first = f.kind == core::FindingKind::stalled || f.kind == core::FindingKind::missing_dump ||
            f.kind == core::FindingKind::unchecked_rank || (f.kind == core::FindingKind::unmatched && holds_culprit) ||
            (f.kind == core::FindingKind::cycle && f.sites.empty());
  }
  core::Finding f;
  f.verdict = core::Verdict::hang;
  f.kind = core::FindingKind::never_launched;
  f.time = job_.last_time();
  std::string ranks;
  for (const auto& h : held) {
    ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", h.rank);
    f.details.push_back(fmt::format("rank{}: {} on '{}'{} waits, and {} line(s) with it: {}", h.rank, h.what, h.comm,
                                    h.site.empty() ? "" : fmt::format(" [{}]", h.site), h.lines, h.why));
    f.sites.push_back(core::Site{h.rank, fmt::format("rank{}.host", h.rank), h.comm, -1,
                                 "called " + h.what + ", never launched", h.site});
  }
  f.summary = fmt::format(
      "rank(s) {} made NCCL calls that NCCL never launched; everything each of them called after waits too", ranks);
  if (first) {
    for (core::Finding& earlier : r.findings) r.notes.push_back(std::move(earlier));
    r.findings.assign(1, std::move(f));
  } else {
    r.notes.push_back(std::move(f));
  }
  decide(r);
}

// Records the plugin lost, a plugin that turned itself off, or a trace without its trailer: the
// traces are not the whole job, so a clean reading of them is no pass.
void Watcher::incomplete(core::RunResult& r, bool live) const {
  const traces::ProfilerJob::Counts& n = job_.counts();
  const std::vector<core::RankId> unended = live ? std::vector<core::RankId>{} : job_.ranks_without_trailer();
  if (n.lost == 0 && n.disabled == 0 && dropped_ == 0 && unended.empty()) return;
  core::Finding f;
  f.verdict = core::Verdict::hazard;
  f.kind = core::FindingKind::incomplete_trace;
  f.time = core::kNoTime;
  if (n.lost == 0 && n.disabled == 0 && dropped_ == 0) {
    f.summary = fmt::format(
        "the traces are not the whole job: the trace of rank(s) {} ends without its trailer (the process was "
        "killed, its file was cut, or it was still running): what it did after its last line is not checked",
        fmt::join(unended, ", "));
  } else {
    f.summary = fmt::format(
        "the traces are not the whole job: {} record(s) lost by the plugin (a ring or a pool overflowed), {} "
        "plugin(s) turned themselves off, {} line(s) dropped as unreadable; what they held is not checked",
        n.lost, n.disabled, dropped_);
    if (!unended.empty())
      f.details.push_back(fmt::format("the trace of rank(s) {} ends without its trailer", fmt::join(unended, ", ")));
  }
  f.details.insert(f.details.end(), drop_reasons_.begin(), drop_reasons_.end());
  // A finding that blames a rank whose trace was cut may be blaming the cut (a collective its peer
  // completed, which it must have called, is missing from it): the cut comes first.
  const auto cut = [&](core::RankId rank) { return std::find(unended.begin(), unended.end(), rank) != unended.end(); };
  const bool blames_cut =
      !r.findings.empty() && (cut(r.findings.front().culprit.rank) ||
                              std::any_of(r.findings.front().sites.begin(), r.findings.front().sites.end(),
                                          [&](const core::Site& s) { return cut(s.rank); }));
  if (blames_cut) {
    f.details.push_back("a note below that names that rank may come from lines its trace lost");
    for (core::Finding& earlier : r.findings) r.notes.push_back(std::move(earlier));
    r.findings.assign(1, std::move(f));
  } else {
    (r.verdict == core::Verdict::pass ? r.findings : r.notes).push_back(std::move(f));
  }
  decide(r);
}

std::optional<WatchReport> Watcher::stall() const {
  if (job_.open_ops().empty() && job_.held().empty()) return std::nullopt;
  core::RunResult r = judge(/*live=*/true);
  if (r.findings.empty()) return std::nullopt;
  return WatchReport{WatchReport::Kind::stall, std::move(r.findings.front())};
}

}  // namespace ppspec::watch
