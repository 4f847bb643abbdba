#include "verify/dumps/trace_check.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <sstream>

#include "core/finding_kinds.h"
#include "core/assert.h"

namespace ppspec::verify {

void TraceChecker::on_event(const core::Event& e) {
  ++events_;
  end_ = std::max(end_, e.t);
  pairing_.on_event(e);
  if (e.kind == core::EventKind::verdict && core::parse_verdict(e.text) == core::Verdict::hang) {
    hang_at_ = e.t;
    timeout_ = std::max<core::Time>(e.value, 0);
    return;
  }
  const double age_s = static_cast<double>(std::max<int64_t>(e.value, 0)) / core::kSec;
  const std::string tail = e.text.empty() ? "" : fmt::format(" [{}]", e.text);
  if (core::is_pending_kernel(e)) {
    const std::string what = fmt::format("kernel {}('{}') still running", e.kernel, e.spec);
    dump_.push_back(DumpEntry{
        1, e.rank, false, fmt::format("rank{} {:<12} {} (launched {:.2f} s ago){}", e.rank, e.actor, what, age_s, tail),
        core::Site{e.rank, std::string(e.actor), "", -1, what, std::string(e.text)}});
  } else if (e.kind == core::EventKind::op_pending) {
    const std::string what = fmt::format("{} on '{}' #{}", core::describe(e.op), e.comm, e.cseq);
    dump_.push_back(
        DumpEntry{0, e.rank, true,
                  fmt::format("rank{} {:<12} pending {} (posted {:.2f} s ago){}", e.rank, e.actor, what, age_s, tail),
                  core::Site{e.rank, std::string(e.actor), std::string(e.comm), e.cseq, what, std::string(e.text)}});
  } else if (e.kind == core::EventKind::actor_blocked) {
    dump_.push_back(DumpEntry{2, e.rank, false,
                              fmt::format("rank{} {:<12} inside {} for {:.2f} s", e.rank, e.actor, e.text, age_s),
                              core::Site{e.rank, std::string(e.actor), "", -1, std::string(e.text), ""}});
  }
}

core::Finding TraceChecker::hang_finding() const {
  PPSPEC_ASSERT(hang_at_ >= 0, "a hang finding without the watchdog's verdict");
  core::Finding f;
  f.verdict = core::Verdict::hang;
  f.kind = core::FindingKind::watchdog;
  f.time = hang_at_;
  std::map<core::RankId, int> pending_by_rank;
  for (const DumpEntry& d : dump_)
    if (d.pending_op) ++pending_by_rank[d.rank];
  std::string ranks;
  for (const auto& [r, n] : pending_by_rank) ranks += fmt::format("{}rank{}: {}", ranks.empty() ? "" : ", ", r, n);
  f.summary = fmt::format("no operation completed for {:.1f} s; posted and not completed: {}",
                          static_cast<double>(timeout_) / core::kSec, ranks.empty() ? "none" : ranks);
  std::vector<const DumpEntry*> ordered;
  for (const DumpEntry& d : dump_) ordered.push_back(&d);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const DumpEntry* a, const DumpEntry* b) { return a->order < b->order; });
  for (const DumpEntry* d : ordered) {
    f.details.push_back(d->detail);
    f.sites.push_back(d->site);
  }
  PPSPEC_ASSERT(f.sites.size() == dump_.size() && f.details.size() == dump_.size());
  return f;
}

core::RunResult TraceChecker::result() const {
  core::RunResult r;
  r.findings = pairing_.mismatches();
  for (core::Finding& f : pairing_.open_mismatches()) r.findings.push_back(std::move(f));
  if (hang_at_ >= 0) {
    r.findings.push_back(hang_finding());
  } else if (auto u = pairing_.unmatched()) {
    u->time = end_;
    r.findings.push_back(std::move(*u));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const core::Finding& a, const core::Finding& b) { return a.time < b.time; });
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;
  PPSPEC_ASSERT(hang_at_ < 0 || !r.findings.empty());
  r.stats.pairs = pairing_.pairs();
  r.stats.events = events_;
  r.stats.sim_time = end_;
  return r;
}

core::RunResult check_trace(traces::TraceReader& reader) {
  TraceChecker checker;
  while (const core::Event* e = reader.next()) checker.on_event(*e);
  return checker.result();
}

core::RunResult check_lines(const std::vector<std::string>& lines, const std::string& where) {
  std::stringstream in;
  for (const std::string& line : lines) in << line << '\n';
  traces::TraceReader reader(in, where, traces::TraceReader::Options{.require_trailer = false});
  return check_trace(reader);
}

}  // namespace ppspec::verify
