#include "tools/show_command.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <ostream>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "core/printable.h"
#include "tools/bad_input.h"
#include "tools/job_trace_input.h"
#include "tools/check_command.h"
#include "tools/trace_scenario.h"
#include "traces/flight_recorder.h"
#include "traces/trace_reader.h"

namespace ppspec::tools {
namespace {

struct Row {
  double key = 0;      // time (ns), or a Flight Recorder sequence position
  std::string time;    // what the time column shows
  std::string column;  // rank.actor, or rank / pg
  core::RankId rank = -1;
  std::string text;
  int64_t step = -1;  // the engine step it belongs to, where it says
};

// A serving run's engine, in its own words: what each step scheduled, sampled, drafted and
// adopted, and what it released. Empty for what a timeline does not need (rows, KV slots).
std::string probe_text(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::batch_scheduled: return fmt::format("step {}: batch scheduled", e.step);
    case core::EventKind::request_scheduled: return fmt::format("step {}: req {} scheduled", e.step, e.req);
    case core::EventKind::tokens_sampled: return fmt::format("step {}: req {} sampled", e.step, e.req);
    case core::EventKind::drafts_proposed: return fmt::format("step {}: req {} drafts proposed", e.step, e.req);
    case core::EventKind::drafts_adopted: return fmt::format("step {}: req {} drafts adopted", e.step, e.req);
    case core::EventKind::feedback_adopted: return fmt::format("step {}: req {} feedback adopted", e.step, e.req);
    case core::EventKind::step_returned: return fmt::format("step {} returned", e.step);
    case core::EventKind::request_released: return fmt::format("req {} released", e.req);
    case core::EventKind::abort_arrived: return fmt::format("req {} abort arrives", e.req);
    case core::EventKind::warmup_phase: return fmt::format("warmup: {}", core::text_of(e));
    default: return "";
  }
}

std::string cell_text(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::op_posted: {
      // The label first: it is what tells two operations of one size apart, and a narrow column
      // cuts the end of a cell.
      if (e.op.label.empty()) return "post " + core::describe(e.op);
      core::OpDesc bare = e.op;
      bare.label = {};
      return fmt::format("'{}' post {}", e.op.label.str(), core::describe(bare));
    }
    case core::EventKind::op_started: return fmt::format("start op {}", e.op_id);
    case core::EventKind::op_completed: return fmt::format("done op {}", e.op_id);
    case core::EventKind::op_pending:
      return fmt::format("PENDING op {} ({:.1f} s)", e.op_id, static_cast<double>(e.value) / 1e9);
    case core::EventKind::kernel_completed:
      return fmt::format("{}{}", e.kernel, e.spec.empty() ? "" : fmt::format("[{}]", e.spec));
    case core::EventKind::module_load: return fmt::format("LOAD {}[{}]", e.kernel, e.spec);
    case core::EventKind::sync_begin: return fmt::format("block: {}", e.text);
    case core::EventKind::sync_end: return "unblock";
    case core::EventKind::actor_blocked: return fmt::format("STUCK in {}", e.text);
    default: return "";
  }
}

// A serving trace shows its engine's steps in place of its kernels (copies and host functions by
// the thousand); a program trace its kernels.
std::vector<Row> trace_rows(const std::string& path, const std::set<int>& ranks) {
  traces::TraceReader reader(path, traces::TraceReader::Options{.require_trailer = false});
  limit_to_embedded_ranks(reader);
  const bool serving = reader.header().kind == core::ScenarioKind::serving;
  std::vector<Row> rows;
  while (const core::Event* e = reader.next()) {
    const bool probe = serving && core::is_engine_probe(e->kind);
    const bool engine_core = probe && e->rank < 0;  // the engine core's own probes: a column of their own
    if ((e->rank < 0 && !engine_core) || (!engine_core && !ranks.empty() && !ranks.count(e->rank))) continue;
    if (serving && e->kind == core::EventKind::kernel_completed) continue;
    std::string text = probe ? probe_text(*e) : cell_text(*e);
    if (text.empty()) continue;
    const int64_t step = e->step >= 0 ? e->step : e->has_op ? e->op.label.step : -1;
    std::string column = engine_core        ? "engine"
                         : e->actor.empty() ? fmt::format("rank{}", e->rank)
                                            : std::string(e->actor);
    rows.push_back(Row{static_cast<double>(e->t), fmt::format("{:.3f}", static_cast<double>(e->t) / 1e6),
                       std::move(column), e->rank, std::move(text), step});
  }
  return rows;
}

std::vector<Row> fr_rows(const std::string& dir, const std::set<int>& ranks) {
  std::vector<Row> rows;
  for (const traces::FrDump& d : traces::read_fr_dir(dir).dumps) {
    if (!ranks.empty() && !ranks.count(d.rank)) continue;
    for (const traces::FrEntry& e : d.entries)
      rows.push_back(
          Row{static_cast<double>(e.record_id), fmt::format("rec {}", e.record_id),
              fmt::format("rank{} pg {}", d.rank, e.group), d.rank,
              fmt::format("#{} {} {}{}", e.is_p2p ? e.p2p_seq_id : e.collective_seq_id,
                          e.profiling_name.substr(e.profiling_name.find(':') + 1),
                          e.input_sizes.empty() ? "" : fmt::format("[{}]", fmt::join(e.input_sizes.front(), ",")),
                          e.state == traces::FrState::completed ? "" : std::string(" ") + traces::to_string(e.state))});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  return rows;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s + std::string(width - s.size(), ' ');
  return s.substr(0, width - 1) + "~";
}

// The row of a finding: its time; Flight Recorder dumps: the culprit's record; none: the last row.
size_t finding_row(const std::vector<Row>& rows, const core::Finding* f, bool fr) {
  size_t at = rows.size() - 1;
  if (f != nullptr && f->time != core::kNoTime && !fr) {
    at = static_cast<size_t>(std::lower_bound(rows.begin(), rows.end(), static_cast<double>(f->time),
                                              [](const Row& row, double t) { return row.key < t; }) -
                             rows.begin());
    return std::min(at, rows.size() - 1);
  }
  if (f != nullptr && !f->sites.empty()) {
    const std::string origin = f->sites.front().origin;  // "... record N"
    const auto rec = origin.rfind("record ");
    const double id = rec == std::string::npos ? 0 : std::stod(origin.substr(rec + 7));
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].rank == f->sites.front().rank && rows[i].key == id) at = i;
  }
  return at;
}

// The columns of the threads and streams the finding names (a deadlock's stuck ones) first, in its
// order, then the others.
std::vector<std::string> finding_columns_first(const std::vector<std::string>& columns, const core::Finding* f) {
  if (f == nullptr) return columns;
  std::vector<std::string> out;
  for (const core::Site& site : f->sites)
    if (std::find(columns.begin(), columns.end(), site.actor) != columns.end() &&
        std::find(out.begin(), out.end(), site.actor) == out.end())
      out.push_back(site.actor);
  for (const std::string& c : columns)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

// --step N: the first row of engine step N.
size_t step_row(const std::vector<Row>& rows, int64_t step, const std::string& input) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].step == step) return i;
  throw core::InputError(input, 0, fmt::format("--step {}: no row of that engine step here (of these ranks)", step));
}

}  // namespace

int show_command(const ShowArgs& args, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec", [&] {
    const TraceInput input(args.input);  // a job's plugin traces: merged
    const bool fr = !input.merged() && std::filesystem::is_directory(args.input);
    const core::RunResult r = check_path(args.input, args.scenario, err);
    std::vector<Row> rows = fr ? fr_rows(args.input, args.ranks) : trace_rows(input.path(), args.ranks);
    if (rows.empty()) throw core::InputError(args.input, 0, "nothing to show for these ranks");
    if (args.around < 1 || (static_cast<size_t>(args.around) > r.findings.size() && !r.findings.empty()))
      throw core::InputError(args.input, 0,
                             fmt::format("--around {}: the input has {} finding(s)", args.around, r.findings.size()));
    // The row of the finding: its time; imported dumps: the culprit's record.
    const core::Finding* f = r.findings.empty() ? nullptr : &r.findings[static_cast<size_t>(args.around - 1)];
    const size_t at = args.step >= 0 ? step_row(rows, args.step, args.input) : finding_row(rows, f, fr);
    const bool mark = args.step >= 0 || f != nullptr;
    // --rows of them, about two thirds before the finding's, fewer only when the input has fewer.
    const size_t want = static_cast<size_t>(args.rows);
    const size_t before = want * 2 / 3;
    size_t first = at > before ? at - before : 0;
    const size_t last = std::min(rows.size(), first + want);
    first = last > want ? std::min(first, last - want) : 0;
    std::vector<std::string> columns;
    for (size_t i = first; i < last; ++i)
      if (std::find(columns.begin(), columns.end(), rows[i].column) == columns.end()) columns.push_back(rows[i].column);
    std::sort(columns.begin(), columns.end());
    columns = finding_columns_first(columns, f);
    // --width, or as wide as the widest cell shown (at most kAutoWidthMax).
    constexpr size_t kAutoWidthMax = 60;
    size_t widest = 8;
    for (size_t i = first; i < last; ++i) widest = std::max({widest, rows[i].text.size(), rows[i].column.size()});
    const size_t w = args.width > 0 ? static_cast<size_t>(std::max(args.width, 8)) : std::min(widest, kAutoWidthMax);
    if (f != nullptr) out << fmt::format("{} ({}): {}\n\n", core::to_string(f->verdict), f->kind, f->summary);
    std::string head = fmt::format("   {:>12} ", fr ? "record" : "time (ms)");
    for (const std::string& c : columns) head += "| " + fit(c, w) + " ";
    out << head << "\n" << std::string(head.size(), '-') << "\n";
    for (size_t i = first; i < last; ++i) {
      std::string line = fmt::format("{} {:>12} ", i == at && mark ? ">>" : "  ", rows[i].time);
      for (const std::string& c : columns) line += "| " + fit(c == rows[i].column ? rows[i].text : "", w) + " ";
      out << line << "\n";
    }
    out << fmt::format("\n(rows {}..{} of {}; --rows, --ranks and --around choose others)\n", first + 1, last,
                       rows.size());
    return 0;
  });
}

}  // namespace ppspec::tools
