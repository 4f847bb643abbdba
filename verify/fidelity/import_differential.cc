#include "verify/fidelity/import_differential.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "verify/fidelity/campaign.h"
#include "verify/fidelity/markdown.h"
#include "scenario/importer/fr_import.h"
#include "program/runner.h"
#include "traces/flight_recorder.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

nlohmann::json to_json(const ImportCase& c) {
  return {{"name", c.name},
          {"ranks", c.dumps.ranks},
          {"kind", c.dumps.kind},
          {"disturbance", c.dumps.disturbance},
          {"simulator", c.dumps.sim_class},
          {"check", c.dumps.check_class},
          {"import", c.import_class},
          {"check_summary", c.dumps.check_summary},
          {"import_summary", c.import_summary},
          {"operations", c.operations},
          {"in_scope", c.in_scope},
          {"as_job", c.as_job},
          {"agree", c.agree},
          {"why", c.why}};
}

void write_table(const FrDifferentialOptions& o, const std::vector<ImportCase>& cs, const fs::path& path) {
  size_t in_scope = 0, agree = 0, out_same = 0, as_simulator = 0, as_job = 0;
  for (const ImportCase& c : cs) {
    in_scope += c.in_scope;
    as_job += c.in_scope && c.as_job;
    as_simulator += c.import_class == c.dumps.sim_class;
    agree += c.in_scope && c.agree;
    out_same += !c.in_scope && c.import_class == c.dumps.check_class;
  }
  std::ofstream md(path);
  md << "# `ppspec import` against `ppspec check`, on the simulator's runs exported as Flight Recorder dumps\n\n";
  md << fmt::format(
      "Written by `ppspec fidelity --backend import --programs {} --seed {} --max-ranks {} --out OUT`. Each case: "
      "a generated program with one disturbance, run on the simulator with a trace, exported as Flight Recorder "
      "dumps (JSON), checked, then imported and the imported scenario run (seed 1). In scope: check's class is "
      "one the order of operations decides (pass, misaligned, unmatched, cycle); there the import's run must give "
      "the same class, or, where check gives another class than the job's run within the Flight Recorder "
      "differential's allowances (a deadlock through a host call or hosts in first-contact setup, data lost at "
      "first contact, a mismatch of what dumps omit), the job's class.\n\n",
      o.programs, o.seed, o.max_ranks);
  md << fmt::format(
      "**{} of {} cases in scope agree.** Out of scope: {} (a stall no order explains, or nothing recorded); "
      "the import's run gives check's class on {} of them anyway.\n\n",
      agree, in_scope, cs.size() - in_scope, out_same);
  md << fmt::format("Of the agreements, {} give the job's class where check gives another within those allowances.\n\n",
                    as_job);
  md << fmt::format(
      "Against the job itself: the import's run gives the class of the simulator's own run of the generated "
      "program on {} of {} cases (the dumps cannot show a broadcast's root, a kernel, or a host call).\n\n",
      as_simulator, cs.size());
  md << "## Verdict classes\n\n";
  std::vector<std::pair<std::string, std::string>> classes;
  for (const ImportCase& c : cs) classes.emplace_back(c.dumps.check_class, c.import_class);
  write_class_matrix(md, "check of the dumps \\ run of the import", classes);
  md << "\n## Disagreements\n\n";
  if (agree == in_scope) md << "None.\n";
  for (const ImportCase& c : cs)
    if (!c.agree)
      md << fmt::format("* `{}` ({} ranks; {}): {}. Check: {}. Import: {}.\n", c.name, c.dumps.ranks,
                        md_cell(c.dumps.disturbance), md_cell(c.why), md_cell(c.dumps.check_summary),
                        md_cell(c.import_summary));
}

}  // namespace

bool import_reproduces(const std::string& check_class) {
  return check_class == "pass" || check_class == "misaligned" || check_class == "unmatched" || check_class == "cycle";
}

ImportCase run_import_case(const FrDifferentialOptions& o, uint64_t index) {
  ImportCase c;
  c.dumps = run_fr_case(o, index);
  c.name = c.dumps.name;
  c.in_scope = import_reproduces(c.dumps.check_class);
  const fs::path dumps = fs::path(c.dumps.file).parent_path() / "dumps" / "json";
  if (!fs::exists(dumps)) {
    c.import_class = "nothing-recorded";
    c.agree = !c.in_scope;
    return c;
  }
  const importer::Imported im = importer::import_flight_recorder(traces::read_fr_dir(dumps.string()), c.name);
  const core::RunResult r = program::run_on_sim(im.program, sim::RunConfig{});
  const core::Finding* first = r.findings.empty() ? nullptr : &r.findings.front();
  c.operations = im.operations;
  c.import_class = fr_class(first, r.verdict);
  c.import_summary = first == nullptr ? "" : first->summary;
  // Where check may differ from the job (the Flight Recorder differential's allowances: a deadlock
  // through a host call, data lost at first contact, a mismatch of what a dump omits), the import may
  // give the job's own class instead.
  c.as_job = c.dumps.agree && c.dumps.check_class != c.dumps.sim_class && c.import_class == c.dumps.sim_class;
  c.agree = !c.in_scope || c.import_class == c.dumps.check_class || c.as_job;
  if (!c.agree)
    c.why = fmt::format("check of the dumps: {}; run of the import: {}", c.dumps.check_class, c.import_class);
  return c;
}

int import_differential_main(const FrDifferentialOptions& o, std::ostream& out) {
  const fs::path dir(o.out);
  const std::vector<ImportCase> cases = run_cases<ImportCase>(
      o.out, o.programs, [&](uint64_t i) { return run_import_case(o, i); },
      [](const ImportCase& c) { return to_json(c); }, out);
  size_t in_scope = 0, agree = 0;
  for (const ImportCase& c : cases) {
    in_scope += c.in_scope;
    agree += c.in_scope && c.agree;
  }
  write_table(o, cases, dir / "import.md");
  out << fmt::format("import differential: {} of {} cases in scope agree ({} out of scope); table: {}\n", agree,
                     in_scope, cases.size() - in_scope, (dir / "import.md").string());
  return agree == in_scope ? 0 : 1;
}

}  // namespace ppspec::fidelity
