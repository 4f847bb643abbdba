#include "report/report.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/printable.h"
#include "verify/monitors/model_reference.h"

namespace ppspec::report {

std::string format_time(core::Time t) {
  if (t < core::kMs) return fmt::format("{:.1f} us", static_cast<double>(t) / core::kUs);
  if (t < core::kSec) return fmt::format("{:.3f} ms", static_cast<double>(t) / core::kMs);
  return fmt::format("{:.3f} s", static_cast<double>(t) / core::kSec);
}

std::string dump_json(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_finding(std::string& s, const core::Finding& f, std::string_view prefix) {
  // A finding from imported dumps has no time of ours (core::kNoTime): its sites say where.
  const std::string when = f.time == core::kNoTime ? ""
                           : f.engine_step >= 0
                               ? fmt::format(" at {}, engine step {}", format_time(f.time), f.engine_step)
                               : fmt::format(" at {}, step {}", format_time(f.time), f.sched_step);
  s += fmt::format("    {}{} ({}){}: {}\n", prefix, core::to_string(f.verdict), f.kind, when, f.summary);
  for (const std::string& d : f.details) s += fmt::format("      {}\n", d);
  // A deadlock's cycle already walks its sites, one line each.
  if (!f.dot.empty()) return;
  std::string where;
  for (const core::Site& site : f.sites) {
    if (site.actor.empty()) continue;
    where += where.empty() ? "" : "; ";
    where += core::site_words(site);
  }
  if (!where.empty()) s += fmt::format("      where: {}\n", where);
}

namespace {

// The engine steps as its findings number them ("engine step 5"): warmup's first, from 0.
std::string engine_steps_span(const ServingFigures& f) {
  if (f.engine_steps == 0) return "no engine step";
  std::string s = fmt::format("engine steps 0-{}", f.engine_steps - 1);
  if (f.warmup_steps > 0) s += fmt::format(" (0-{} warmup)", f.warmup_steps - 1);
  return s;
}

// The first line of a run's report: verdict against expectation, then what the run did.
std::string headline(const RunRecord& r) {
  const core::RunResult& res = r.result;
  std::string s =
      fmt::format("{} {}  {}  ", r.ok ? "ok  " : "FAIL", core::printable(r.scenario), core::printable(r.file));
  if (r.flight_recorder)
    return s +
           fmt::format("verdict {}  [{} operations in the dumps; compared: {} collective positions, {} p2p pairs]\n",
                       core::to_string(res.verdict), res.stats.ops_posted, res.stats.collective_slots, res.stats.pairs);
  if (r.gpu)
    return s + fmt::format("GPU verdict {} (expected {})  [{} ops posted, {} pairings, {:.1f} ms wall]\n",
                           core::to_string(res.verdict), core::to_string(r.expected), res.stats.ops_posted,
                           res.stats.pairs, r.wall_ms);
  if (!r.has_expectation)
    return s + fmt::format("verdict {}{}  [{} events, {} pairings, {} traced]\n", core::to_string(res.verdict),
                           r.recorded ? fmt::format(" (recorded {})", core::to_string(*r.recorded)) : "",
                           res.stats.events, res.stats.pairs, format_time(res.stats.sim_time));
  const std::string expected = r.expectation_written ? fmt::format("expected {}", core::to_string(r.expected))
                                                     : std::string("no [expect]: exploring, pass expected");
  s += fmt::format("verdict {} ({})  seed {}  {}  [", core::to_string(res.verdict), expected, r.seed, r.strategy);
  if (r.serving) {
    const ServingFigures& f = *r.serving;
    s += fmt::format(
        "{} requests, {}, {}acceptance {:.2f}, {:.1f} tokens/serving step, ", f.requests, engine_steps_span(f),
        f.prefix_evictions > 0 ? fmt::format("{} prefix-cache blocks evicted, ", f.prefix_evictions) : std::string(),
        f.acceptance_rate, f.tokens_per_step);
  } else {
    s += fmt::format("{} steps, ", res.stats.sched_steps);
  }
  return s + fmt::format("{} simulated, {:.1f} ms wall]\n", format_time(res.stats.sim_time), r.wall_ms);
}

}  // namespace

// What the model oracle checked, and what it stopped checking (never silently).
std::string model_oracle_line(const verify::OnlineCoverage& c) {
  if (c.requests_followed == 0) return "";
  const uint64_t stopped = c.requests_unfollowable + c.requests_forgotten_idle + c.requests_forgotten_for_room;
  std::string s = fmt::format("    model oracle: {} activation rows and {} greedy samples checked over {} requests",
                              c.rows_checked, c.samples_checked, c.requests_followed);
  if (stopped > 0)
    s += fmt::format(
        "; it stopped following {} ({} embedded what it cannot model, {} idle for {} steps, {} for room past {})",
        stopped, c.requests_unfollowable, c.requests_forgotten_idle, verify::ModelReference::kStepsIdle,
        c.requests_forgotten_for_room, verify::ModelReference::kRequestsKept);
  return s + "\n";
}

// What the monitors left unchecked, so that a pass says it (nothing when they skipped nothing).
std::string monitor_skips_line(const verify::OnlineCoverage& c) {
  if (c.monitor_skips.empty()) return "";
  std::string s = "    monitors skipped:";
  const char* sep = " ";
  for (const auto& [what, n] : c.monitor_skips) {
    s += fmt::format("{}{} ({})", sep, what, n);
    sep = "; ";
  }
  return s + "\n";
}

// The engine paths a serving run reached (those it reached at all), and the mechanisms its
// scenario enables that it never exercised: a pass says what it covered.
std::string paths_lines(const ServingFigures& f) {
  std::string s = "    paths reached:";
  const char* sep = " ";
  for (const serving::PathField& p : serving::path_fields()) {
    if (f.paths.*p.field == 0) continue;
    s += fmt::format("{}{} {}", sep, p.name, f.paths.*p.field);
    sep = ", ";
  }
  if (*sep == ' ') s += " none of the mechanisms counted";
  s += "\n";
  for (const std::string& w : f.unexercised) s += fmt::format("    warning: {}\n", w);
  for (const UnreachableFault& u : f.unreachable_faults)
    s += fmt::format("    warning: fault {} is switched on, but this deployment cannot reach it: {}\n", u.fault, u.why);
  return s;
}

namespace {

// The simulator's rules a report cites — "(R3, R5)", "(NCCL_RUNTIME_CONNECT, R1)", "(R4; ...)" —
// in order, so that the report can say where they are written down.
std::set<int> cited_rules(const core::RunResult& res) {
  std::set<int> rules;
  auto scan = [&rules](const std::string& text) {
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (text[i] != 'R' || !(text[i - 1] == '(' || (i >= 2 && text[i - 1] == ' ' && text[i - 2] == ','))) continue;
      size_t j = i + 1;
      int n = 0;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && n < 100)
        n = n * 10 + (text[j++] - '0');
      if (j == i + 1 || j >= text.size() || (text[j] != ')' && text[j] != ',' && text[j] != ';')) continue;
      if (n >= 1 && n <= 11) rules.insert(n);
    }
  };
  for (const auto* list : {&res.findings, &res.notes})
    for (const core::Finding& f : *list) {
      scan(f.summary);
      for (const std::string& d : f.details) scan(d);
      for (const core::Site& site : f.sites) scan(site.what);
    }
  return rules;
}

}  // namespace

std::string format_text(const RunRecord& r) {
  const core::RunResult& res = r.result;
  if (!r.internal_error.empty())
    return fmt::format("ERROR {}  {}  internal error of ppspec, no verdict: {}\n    reproduce: {}\n",
                       core::printable(r.scenario), core::printable(r.file), core::printable(r.internal_error, 400),
                       core::printable(r.reproduce));
  std::string s = headline(r);
  if (!r.ok && !r.mismatch.empty()) s += fmt::format("    not as expected: {}\n", r.mismatch);
  if (r.serving) s += model_oracle_line(r.serving->model_oracle) + monitor_skips_line(r.serving->model_oracle);
  if (r.serving) s += paths_lines(*r.serving);
  for (const core::Finding& f : res.findings) append_finding(s, f, "");
  for (const core::Finding& f : res.notes) append_finding(s, f, "note: ");
  const bool hazards = std::any_of(res.notes.begin(), res.notes.end(),
                                   [](const core::Finding& f) { return f.verdict == core::Verdict::hazard; });
  if (res.verdict == core::Verdict::pass && hazards)
    s += "    the hazards above are notes while [runtime] strict = false: set strict = true to make them fail the run "
         "(on GPUs a hazard stalls or hangs)\n";
  for (const core::Finding& f : res.findings) {
    if (f.dot.empty()) continue;
    s += "    wait-for graph (Graphviz):\n";
    size_t pos = 0;
    while (pos < f.dot.size()) {
      const size_t nl = f.dot.find('\n', pos);
      s += fmt::format("      {}\n", f.dot.substr(pos, nl - pos));
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
  }
  if ((!r.ok || res.verdict != core::Verdict::pass) && !r.reproduce.empty())
    s += fmt::format("    reproduce: {}\n", core::printable(r.reproduce));
  if (const std::set<int> rules = cited_rules(res); !rules.empty()) {
    std::vector<std::string> names;
    for (const int n : rules) names.push_back(fmt::format("R{}", n));
    s += fmt::format("    rules cited: {}: docs/rules.md\n", fmt::join(names, ", "));
  }
  return s;
}

void SeedSummary::add(const RunRecord& r) {
  ++seeds;
  if (!r.internal_error.empty()) {  // no verdict to count, and never as expected
    ++internal_errors;
    if (!first_unexpected) first_unexpected = r.seed;
    return;
  }
  ++verdicts[r.result.verdict];
  wall_ms += r.wall_ms;
  if (!first_finding_seed && !r.result.findings.empty()) {
    const core::Finding& f = r.result.findings.front();
    first_finding_seed = r.seed;
    first_finding = fmt::format("{} ({}): {}", core::to_string(f.verdict), f.kind, core::printable(f.summary, 300));
  }
  if (r.ok)
    ++as_expected;
  else if (!first_unexpected)
    first_unexpected = r.seed;
}

std::string format_summary(const SeedSummary& s) {
  const bool ok = s.as_expected == s.seeds;
  std::string line = fmt::format("{} {}  {}  {} of {} seeds as expected", ok ? "ok  " : "FAIL",
                                 core::printable(s.scenario), core::printable(s.file), s.as_expected, s.seeds);
  if (s.first_unexpected) line += fmt::format("; first unexpected: seed {}", *s.first_unexpected);
  std::string seen;
  for (const auto& [verdict, count] : s.verdicts)
    seen += fmt::format("{}{} {}", seen.empty() ? "" : ", ", core::to_string(verdict), count);
  if (s.internal_errors > 0)
    seen += fmt::format("{}internal error of ppspec {}", seen.empty() ? "" : ", ", s.internal_errors);
  line += fmt::format("  (verdicts: {}; expected {})  seeds {}..{}  {}  [{:.1f} ms wall]\n", seen,
                      core::to_string(s.expected), s.first_seed, s.first_seed + s.seeds - 1, s.strategy, s.wall_ms);
  if (s.first_finding_seed)
    line += fmt::format("    first finding (seed {}): {}\n", *s.first_finding_seed, s.first_finding);
  return line;
}

nlohmann::json to_json(const core::Finding& f) {
  nlohmann::json sites = nlohmann::json::array();
  for (const core::Site& site : f.sites) {
    nlohmann::json j;
    if (site.rank >= 0) j["rank"] = site.rank;
    if (!site.actor.empty()) j["actor"] = site.actor;
    if (!site.comm.empty()) j["comm"] = site.comm;
    if (site.cseq >= 0) j["cseq"] = site.cseq;
    if (!site.what.empty()) j["what"] = site.what;
    if (!site.origin.empty()) j["origin"] = site.origin;
    sites.push_back(std::move(j));
  }
  // What is not known is null, never a sentinel: a time a dump does not record, a step of no engine,
  // a culprit nobody can name.
  using Json = nlohmann::json;
  auto known = [](int64_t v) { return v >= 0 ? Json(v) : Json(nullptr); };
  Json j = {{"verdict", core::to_string(f.verdict)},
            {"kind", std::string(core::to_string(f.kind))},
            {"time_ns", known(f.time)},
            {"step", f.sched_step},
            {"summary", f.summary},
            {"details", f.details},
            {"sites", sites},
            {"engine_step", known(f.engine_step)},
            {"culprit_rank", known(f.culprit.rank)},
            {"request", known(f.request)},
            {"culprit", nullptr}};
  if (!f.dot.empty()) j["dot"] = f.dot;
  if (f.culprit.rank >= 0 || f.culprit.what != core::Blame::none) {
    const core::Culprit& c = f.culprit;
    j["culprit"] = {{"rank", known(c.rank)},
                    {"comm", c.comm.empty() ? Json(nullptr) : Json(c.comm)},
                    {"p2p", c.p2p},
                    {"peer", known(c.peer)},
                    {"position", known(c.position)},
                    {"what", std::string(core::to_string(c.what))}};
  }
  return j;
}

nlohmann::json to_json(const RunRecord& r) {
  const core::RunResult& res = r.result;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : res.findings) findings.push_back(to_json(f));
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& f : res.notes) notes.push_back(to_json(f));
  nlohmann::json j = {
      {"file", r.file},
      {"scenario", r.scenario},
      {"seed", r.seed},
      {"strategy", r.strategy},
      {"verdict", core::to_string(res.verdict)},
      {"expected", r.has_expectation ? nlohmann::json(core::to_string(r.expected)) : nlohmann::json(nullptr)},
      {"ok", r.ok},
      {"first", res.findings.empty() ? nlohmann::json(nullptr) : to_json(res.findings.front())},
      {"findings", findings},
      {"notes", notes},
      {"stats",
       {{"steps", res.stats.sched_steps},
        {"sim_time_ns", res.stats.sim_time},
        {"ops_posted", res.stats.ops_posted},
        {"pairs", res.stats.pairs},
        {"events", res.stats.events},
        {"fibers", res.stats.fibers},
        {"wall_ms", r.wall_ms}}},
      {"reproduce", r.reproduce.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reproduce)},
  };
  if (!r.internal_error.empty()) {
    j["verdict"] = nullptr;  // no verdict: ppspec itself failed on this run
    j["internal_error"] = r.internal_error;
  }
  if (r.serving) {
    const verify::OnlineCoverage& c = r.serving->model_oracle;
    j["model_oracle"] = {{"rows_checked", c.rows_checked},
                         {"samples_checked", c.samples_checked},
                         {"requests_followed", c.requests_followed},
                         {"requests_unfollowable", c.requests_unfollowable},
                         {"requests_forgotten_idle", c.requests_forgotten_idle},
                         {"requests_forgotten_for_room", c.requests_forgotten_for_room}};
    if (!c.monitor_skips.empty()) {
      nlohmann::json skips = nlohmann::json::object();
      for (const auto& [what, n] : c.monitor_skips) skips[std::string(what)] = n;
      j["monitor_skips"] = std::move(skips);
    }
  }
  if (r.serving)
    j["serving"] = {{"engine_steps", r.serving->engine_steps},      {"warmup_steps", r.serving->warmup_steps},
                    {"serving_steps", r.serving->serving_steps},    {"requests", r.serving->requests},
                    {"output_tokens", r.serving->output_tokens},    {"acceptance_rate", r.serving->acceptance_rate},
                    {"tokens_per_step", r.serving->tokens_per_step}};
  if (r.serving) {
    nlohmann::json paths = nlohmann::json::object();
    for (const serving::PathField& p : serving::path_fields()) paths[p.name] = r.serving->paths.*p.field;
    j["paths_reached"] = std::move(paths);
    j["unexercised"] = r.serving->unexercised;
    nlohmann::json unreachable = nlohmann::json::object();
    for (const UnreachableFault& u : r.serving->unreachable_faults) unreachable[u.fault] = u.why;
    j["unreachable_faults"] = std::move(unreachable);
  }
  if (!r.ok) j["mismatch"] = r.mismatch;
  if (r.recorded) j["recorded"] = core::to_string(*r.recorded);
  return j;
}

}  // namespace ppspec::report
