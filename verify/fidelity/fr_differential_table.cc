// The Flight Recorder differential's run over many cases and its table (verify/fidelity/fr_differential.h).
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/culprit_json.h"
#include "verify/fidelity/campaign.h"
#include "verify/fidelity/fr_differential.h"
#include "verify/fidelity/markdown.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

void write_by_kind(std::ostream& md, const std::vector<FrCase>& cs) {
  struct Row {
    size_t n = 0, agree = 0, named_sim = 0, named_both = 0, invisible = 0, host = 0, lost = 0, cannot_tell = 0,
           unseen = 0;
    std::map<std::string, size_t> sim;
  };
  std::map<std::string, Row> rows;
  for (const FrCase& c : cs) {
    Row& r = rows[c.kind];
    ++r.n;
    r.agree += c.agree;
    r.invisible += c.invisible;
    r.host += c.via_host_call;
    r.lost += c.data_lost && (c.sim_class == "stall" || c.sim_class == "unmatched" || c.sim_class == "cycle");
    r.named_sim += c.sim_culprit.rank >= 0;
    r.named_both += c.sim_culprit.rank >= 0 && c.check_culprit.rank >= 0 && c.agree && !c.cannot_tell;
    r.cannot_tell += c.cannot_tell;
    r.unseen += c.unseen;
    ++r.sim[c.sim_class];
  }
  md << "| disturbance | cases | the simulator's verdicts | culprit named by the simulator | ... and the same by check "
        "| check: cannot tell "
        "| not in the dumps | mismatch of what dumps omit | deadlock through a host call | data lost at first contact "
        "| agree |\n";
  md << "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [kind, r] : rows) {
    std::string classes;
    for (const auto& [k, n] : r.sim) classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", k, n);
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", kind, r.n, classes, r.named_sim,
                      r.named_both, r.cannot_tell, r.unseen, r.invisible, r.host, r.lost, r.agree);
  }
}

nlohmann::json to_json(const FrCase& c) {
  return {{"name", c.name},
          {"ranks", c.ranks},
          {"kind", c.kind},
          {"shape", generator::to_string(c.shape)},
          {"disturbed_rank", c.disturbed_rank},
          {"cannot_tell", c.cannot_tell},
          {"unseen", c.unseen},
          {"disturbance", c.disturbance},
          {"simulator", c.sim_class},
          {"check", c.check_class},
          {"simulator_culprit", core::culprit_json(c.sim_culprit)},
          {"check_culprit", core::culprit_json(c.check_culprit)},
          {"simulator_summary", c.sim_summary},
          {"check_summary", c.check_summary},
          {"invisible", c.invisible},
          {"via_host_call", c.via_host_call},
          {"data_lost", c.data_lost},
          {"agree", c.agree},
          {"why", c.why}};
}

void write_table(const FrDifferentialOptions& o, const std::vector<FrCase>& cs, const fs::path& path) {
  size_t agree = 0;
  for (const FrCase& c : cs) agree += c.agree;
  std::ofstream md(path);
  md << "# `ppspec check` against the simulator, on the simulator's runs exported as Flight Recorder dumps\n\n";
  md << fmt::format(
      "Written by `ppspec fidelity --backend flight-recorder --shape {} --programs {} --seed {} --max-ranks {} --out "
      "OUT`. "
      "Each case: a generated program of the family, with one disturbance or none, run on the simulator (seed 1) "
      "with a trace, exported as PyTorch writes the family's dumps (traces/fr_writer.h), both formats (JSON, pickle) "
      "read back and checked with `--calls {}`. Agreement: the same verdict class and the same culprit (rank, "
      "communicator, position) — or check names none (it cannot tell), or, where the simulator names none, the "
      "rank the program was disturbed on; a confident wrong culprit disagrees. For a mismatch only of what a dump "
      "does not record (a broadcast's root), check must not pass; where the family's dumps cannot show the failure "
      "(Gloo's, a snapshot taken before it, a wrapped ring's unaligned channel), check may say so but claim no "
      "other cause.\n\n",
      generator::to_string(o.shape), o.programs, o.seed, o.max_ranks, verify::to_string(fr_read_calls(o.shape)));
  md << fmt::format("**{} of {} cases agree.**\n\n", agree, cs.size());
  md << "## By disturbance\n\n";
  write_by_kind(md, cs);
  md << "\n## Verdict classes\n\n";
  std::vector<std::pair<std::string, std::string>> classes;
  for (const FrCase& c : cs) classes.emplace_back(c.sim_class, c.check_class);
  write_class_matrix(md, "simulator \\ check", classes);
  md << "\n## Disagreements\n\n";
  if (agree == cs.size()) md << "None.\n";
  for (const FrCase& c : cs)
    if (!c.agree)
      md << fmt::format("* `{}` ({} ranks; {}): {}. Simulator: {}. Check: {}.\n", c.name, c.ranks,
                        md_cell(c.disturbance), md_cell(c.why), md_cell(c.sim_summary), md_cell(c.check_summary));
}

}  // namespace

int fr_differential_all_main(const FrDifferentialOptions& o, std::ostream& out) {
  const fs::path dir(o.out);
  fs::create_directories(dir);
  std::ofstream md(dir / "flight-recorder.md");
  md << fmt::format(
      "# `ppspec check` against the simulator, every family of Flight Recorder dumps\n\n"
      "Written by `ppspec fidelity --backend flight-recorder --shape all --programs {} --seed {} --max-ranks {} --out "
      "OUT`; "
      "each family's own table is OUT/FAMILY/flight-recorder.md.\n\n"
      "| family | cases | agree | same culprit | check: cannot tell | not in the dumps | disagree "
      "|\n|---|---:|---:|---:|---:|---:|---:|\n",
      o.programs, o.seed, o.max_ranks);
  int status = 0;
  for (generator::FrShape shape : generator::kFrShapes) {
    FrDifferentialOptions one = o;
    one.shape = shape;
    one.out = (dir / std::string(generator::to_string(shape))).string();
    out << fmt::format("== {}\n", generator::to_string(shape));
    status = std::max(status, fr_differential_main(one, out));
    std::ifstream in(fs::path(one.out) / "summary.json");
    const nlohmann::json all = nlohmann::json::parse(in);
    size_t agree = 0, same = 0, cannot = 0, unseen = 0;
    for (const nlohmann::json& c : all) {
      agree += c["agree"].get<bool>();
      cannot += c["cannot_tell"].get<bool>();
      unseen += c["unseen"].get<bool>();
      same += c["agree"].get<bool>() && !c["cannot_tell"].get<bool>() && c["check_culprit"]["rank"].get<int>() >= 0;
    }
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", generator::to_string(shape), all.size(), agree, same,
                      cannot, unseen, all.size() - agree);
  }
  out << fmt::format("flight-recorder differential, every family: table {}\n", (dir / "flight-recorder.md").string());
  return status;
}

int fr_differential_main(const FrDifferentialOptions& o, std::ostream& out) {
  const fs::path dir(o.out);
  const std::vector<FrCase> cases = run_cases<FrCase>(
      o.out, o.programs, [&](uint64_t i) { return run_fr_case(o, i); }, [](const FrCase& c) { return to_json(c); },
      out);
  size_t agree = 0;
  for (const FrCase& c : cases) agree += c.agree;
  write_table(o, cases, dir / "flight-recorder.md");
  out << fmt::format("flight-recorder differential: {} of {} cases agree; table: {}\n", agree, cases.size(),
                     (dir / "flight-recorder.md").string());
  return agree == cases.size() ? 0 : 1;
}

}  // namespace ppspec::fidelity
