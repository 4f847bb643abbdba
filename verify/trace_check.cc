#include "verify/trace_check.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "verify/pairing_checker.h"

namespace ppspec::verify {

core::Finding hang_finding(const std::vector<core::Event>& dump, core::Time timeout) {
  core::Finding f;
  f.verdict = core::Verdict::hang;
  f.kind = "watchdog";
  std::map<core::RankId, int> pending_by_rank;
  for (const core::Event& e : dump)
    if (e.kind == core::EventKind::op_pending) ++pending_by_rank[e.rank];
  // Operations first, then kernels, then host threads: what the GPU holds, then who waits.
  std::vector<core::Event> ordered = dump;
  std::stable_sort(ordered.begin(), ordered.end(), [](const core::Event& a, const core::Event& b) {
    auto rank = [](const core::Event& e) { return e.kind == core::EventKind::actor_blocked ? 2 : (e.has_op ? 0 : 1); };
    return rank(a) < rank(b);
  });
  std::string ranks;
  for (const auto& [r, n] : pending_by_rank) ranks += fmt::format("{}rank{}: {}", ranks.empty() ? "" : ", ", r, n);
  f.summary = fmt::format("no operation completed for {:.1f} s; posted and not completed: {}",
                          static_cast<double>(timeout) / core::kSec, ranks.empty() ? "none" : ranks);
  for (const core::Event& e : ordered) {
    if (e.kind == core::EventKind::op_pending && !e.has_op) {
      const std::string what = fmt::format("kernel {}('{}') still running", e.kernel, e.spec);
      f.details.push_back(fmt::format("rank{} {:<12} {} (launched {:.2f} s ago){}", e.rank, e.actor, what,
                                      static_cast<double>(e.value) / core::kSec,
                                      e.text.empty() ? "" : fmt::format(" [{}]", e.text)));
      f.sites.push_back(core::Site{e.rank, std::string(e.actor), "", -1, what, std::string(e.text)});
    } else if (e.kind == core::EventKind::op_pending) {
      const std::string what = fmt::format("{} on '{}' #{}", core::describe(e.op), e.comm, e.cseq);
      f.details.push_back(fmt::format("rank{} {:<12} pending {} (posted {:.2f} s ago){}", e.rank, e.actor, what,
                                      static_cast<double>(e.value) / core::kSec,
                                      e.text.empty() ? "" : fmt::format(" [{}]", e.text)));
      f.sites.push_back(core::Site{e.rank, std::string(e.actor), std::string(e.comm), e.cseq, what, std::string(e.text)});
    } else if (e.kind == core::EventKind::actor_blocked) {
      f.details.push_back(fmt::format("rank{} {:<12} inside {} for {:.2f} s", e.rank, e.actor, e.text,
                                      static_cast<double>(e.value) / core::kSec));
      f.sites.push_back(core::Site{e.rank, std::string(e.actor), "", -1, std::string(e.text), ""});
    }
  }
  return f;
}

core::RunResult check_events(const std::vector<core::Event>& events) {
  PairingChecker pairing;
  std::vector<core::Event> dump;
  core::Time hang_at = -1;
  core::Time timeout = 0;
  core::Time end = 0;
  std::vector<core::Time> mismatch_times;
  for (const core::Event& e : events) {
    const size_t before = pairing.mismatches().size();
    pairing.on_event(e);
    if (pairing.mismatches().size() > before) mismatch_times.push_back(e.t);
    if (e.kind == core::EventKind::op_pending || e.kind == core::EventKind::actor_blocked) dump.push_back(e);
    if (e.kind == core::EventKind::verdict && e.text == "hang") {
      hang_at = e.t;
      timeout = std::max<core::Time>(e.value, 0);
    }
    end = std::max(end, e.t);
  }
  core::RunResult r;
  for (size_t i = 0; i < pairing.mismatches().size(); ++i) {
    core::Finding f = pairing.mismatches()[i];
    f.time = mismatch_times[i];
    r.findings.push_back(std::move(f));
  }
  if (hang_at >= 0) {
    core::Finding f = hang_finding(dump, timeout);
    f.time = hang_at;
    r.findings.push_back(std::move(f));
  } else if (auto u = pairing.unmatched()) {
    u->time = end;
    r.findings.push_back(std::move(*u));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const core::Finding& a, const core::Finding& b) { return a.time < b.time; });
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;
  r.stats.pairs = pairing.pairs();
  r.stats.events = events.size();
  r.stats.sim_time = end;
  return r;
}

core::RunResult check_trace(const traces::Trace& trace) { return check_events(trace.events); }

}  // namespace ppspec::verify
