// The NCCL profiler differential's runs over many cases and its tables (verify/fidelity/plugin_differential.h).
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/culprit_json.h"
#include "verify/fidelity/campaign.h"
#include "verify/fidelity/markdown.h"
#include "verify/fidelity/plugin_differential.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

std::string time_text(core::Time t) { return t < 0 ? "-" : fmt::format("{:.1f} us", static_cast<double>(t) / 1000.0); }

void write_by_kind(std::ostream& md, const std::vector<PluginCase>& cs) {
  struct Row {
    size_t n = 0, agree = 0, named_sim = 0, named_both = 0, misaligned = 0, in_time = 0, host = 0, connect = 0,
           lost = 0, hidden = 0, later = 0;
    std::map<std::string, size_t> sim;
  };
  std::map<std::string, Row> rows;
  for (const PluginCase& c : cs) {
    Row& r = rows[c.kind];
    ++r.n;
    r.agree += c.agree;
    r.host += c.via_host_call;
    r.connect += c.via_connect;
    r.hidden += c.not_visible;
    r.later += c.not_yet_or_never;
    r.lost += c.data_lost;
    r.named_sim += c.sim_culprit.rank >= 0;
    r.named_both += c.sim_culprit.rank >= 0 && c.watch_culprit.rank >= 0 && c.agree;
    const bool misaligned = c.sim_class == "misaligned" && c.watch_class == "misaligned";
    r.misaligned += misaligned;
    r.in_time += misaligned && c.in_time;
    ++r.sim[c.sim_class];
  }
  md << "| disturbance | cases | the simulator's verdicts | culprit named by the simulator | ... and the same by the "
        "watcher | "
        "misalignments | ... reported no later than the simulator found them | deadlock through a host call | deadlock "
        "in "
        "first-contact setup | data lost at first contact | not a communication verdict | unmatched seen as a cycle "
        "through a "
        "counterpart not posted | agree |\n";
  md << "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [kind, r] : rows) {
    std::string classes;
    for (const auto& [k, n] : r.sim) classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", k, n);
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", kind, r.n, classes,
                      r.named_sim, r.named_both, r.misaligned, r.in_time, r.host, r.connect, r.lost, r.hidden, r.later,
                      r.agree);
  }
}

nlohmann::json to_json(const PluginCase& c) {
  return {{"name", c.name},
          {"ranks", c.ranks},
          {"kind", c.kind},
          {"disturbance", c.disturbance},
          {"simulator", c.sim_class},
          {"watcher", c.watch_class},
          {"simulator_culprit", core::culprit_json(c.sim_culprit)},
          {"watcher_culprit", core::culprit_json(c.watch_culprit)},
          {"simulator_summary", c.sim_summary},
          {"watcher_summary", c.watch_summary},
          {"simulator_found_ns", c.sim_found},
          {"watcher_reported_ns", c.watch_reported},
          {"operations_nccl_told", c.sim_posted},
          {"operations_recorded", c.recorded},
          {"operations_told", c.told},
          {"via_host_call", c.via_host_call},
          {"via_connect", c.via_connect},
          {"data_lost", c.data_lost},
          {"not_visible", c.not_visible},
          {"not_yet_or_never", c.not_yet_or_never},
          {"agree", c.agree},
          {"why", c.why}};
}

void write_disagreements(std::ostream& md, const std::vector<PluginCase>& cs) {
  size_t agree = 0;
  for (const PluginCase& c : cs) agree += c.agree;
  if (agree == cs.size()) md << "None.\n";
  for (const PluginCase& c : cs)
    if (!c.agree)
      md << fmt::format("* `{}` ({}): {}. Simulator: {}. Watcher: {}.\n", c.name,
                        md_cell(c.disturbance.empty() ? c.file : c.disturbance), md_cell(c.why), md_cell(c.sim_summary),
                        md_cell(c.watch_summary));
}

void write_table(const PluginDifferentialOptions& o, const std::vector<PluginCase>& cs, const fs::path& path) {
  size_t agree = 0;
  std::vector<std::pair<std::string, std::string>> classes;
  for (const PluginCase& c : cs) {
    agree += c.agree;
    classes.emplace_back(c.sim_class, c.watch_class);
  }
  std::ofstream md(path);
  md << "# The NCCL profiler plugin and `ppspec watch` against the simulator\n\n";
  md << fmt::format(
      "Written by `ppspec fidelity --backend nccl-profiler --programs {} --seed {} --max-ranks {} --interface {} --out "
      "OUT`. "
      "Each case: a generated program (2 to {} ranks, several communicators, grouped and ungrouped p2p, collectives, "
      "CUDA graphs) with one disturbance, run on the simulator (seed 1) while the adapter drives the plugin library "
      "through its NCCL interface v{} as NCCL would; the watcher follows the plugin's per-rank traces after every "
      "call. Agreement: the same verdict class and, where either blames one, the same culprit (rank, communicator, "
      "position); a misalignment reported no later than the simulator found it; a passing run with every operation "
      "recorded. What NCCL does not tell a profiler is said, not hidden: a deadlock through a host call (a module "
      "load, a sync) need only be seen as communication stuck; a deadlock in first-contact connection setup holds "
      "threads inside ncclGroupEnd before NCCL builds their tasks, so it must be seen as calls never launched on a "
      "rank the simulator names; a verdict about memory or a call NCCL refuses with an error code (connect in "
      "capture) must get no communication finding beyond operations the simulator left in flight; an operation "
      "the simulator knows its partner never posts may be seen as a cycle through that counterpart, since a "
      "trace cannot tell \"not yet\" from \"never\".\n\n",
      o.programs, o.seed, o.max_ranks, o.interface, o.max_ranks, o.interface);
  md << fmt::format("**{} of {} cases agree.**\n\n## By disturbance\n\n", agree, cs.size());
  write_by_kind(md, cs);
  md << "\n## Verdict classes\n\n";
  write_class_matrix(md, "simulator \\ watcher", classes);
  md << "\n## Disagreements\n\n";
  write_disagreements(md, cs);
}

}  // namespace

int plugin_differential_main(const PluginDifferentialOptions& o, std::ostream& out) {
  const fs::path dir(o.out);
  const std::vector<PluginCase> cases = run_cases<PluginCase>(
      o.out, o.programs, [&](uint64_t i) { return run_plugin_case(o, i); },
      [](const PluginCase& c) { return to_json(c); }, out);
  size_t agree = 0;
  for (const PluginCase& c : cases) agree += c.agree;
  write_table(o, cases, dir / "nccl-profiler.md");
  out << fmt::format("nccl-profiler differential: {} of {} cases agree; table: {}\n", agree, cases.size(),
                     (dir / "nccl-profiler.md").string());
  return agree == cases.size() ? 0 : 1;
}

int plugin_scenarios_main(const std::vector<std::string>& files, const std::string& out_dir, const std::string& table,
                          std::ostream& out) {
  std::vector<PluginCase> cases;
  size_t agree = 0;
  for (const std::string& file : files) {
    PluginCase c = compare_on_plugin(file, (fs::path(out_dir) / fs::path(file).stem()).string());
    agree += c.agree;
    out << fmt::format("{} {}: simulator {}, watcher {}{}\n", c.agree ? "agree   " : "DISAGREE", c.name, c.sim_class,
                       c.watch_class, c.agree ? "" : ": " + c.why);
    cases.push_back(std::move(c));
  }
  std::ofstream md(table);
  md << "# Committed scenarios through the NCCL profiler plugin and `ppspec watch`\n\n";
  md << "Written by `scripts/dev/nccl_profiler_differential.sh`. Each scenario runs on the simulator (seed 1) while "
        "the adapter drives "
        "the plugin library as NCCL would; the watcher follows the per-rank traces. Columns: the simulator's verdict "
        "class; the "
        "watcher's; the operations NCCL is told of and the operations the plugin recorded; when the simulator found "
        "its first "
        "finding and when the watcher first reported a misalignment (simulated time).\n\n";
  md << fmt::format("**{} of {} scenarios agree.**\n\n", agree, cases.size());
  md << "| scenario | simulator | watcher | operations told / recorded | simulator found | watcher reported | agree "
        "|\n";
  md << "|---|---|---|---:|---:|---:|---|\n";
  for (const PluginCase& c : cases)
    md << fmt::format("| {} | {} | {} | {} / {} | {} | {} | {} |\n", c.name, c.sim_class, c.watch_class, c.told,
                      c.recorded, time_text(c.sim_found), time_text(c.watch_reported),
                      c.agree ? "yes" : "no: " + md_cell(c.why));
  md << "\n## Disagreements\n\n";
  write_disagreements(md, cases);
  out << fmt::format("{} of {} scenarios agree; table: {}\n", agree, cases.size(), table);
  return agree == cases.size() ? 0 : 1;
}

}  // namespace ppspec::fidelity
