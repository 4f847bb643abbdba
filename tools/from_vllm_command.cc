#include "tools/from_vllm_command.h"

#include <filesystem>
#include <sstream>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>

#include "core/event.h"
#include "core/error.h"
#include "core/printable.h"
#include "scenario/fuzzer/around.h"
#include "scenario/serving_case.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tools/bad_input.h"
#include "tools/output_file.h"
#include "scenario/vllm_config/to_serving.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;

vllm_config::EngineArgs read_args(const FromVllmArgs& a) {
  if (a.config.empty() && a.vllm_args.empty())
    throw core::InputError("ppspec from-vllm", 0,
                           "no vLLM arguments: give a config file, or `vllm serve`'s flags after --");
  std::error_code ec;
  if (!a.config.empty() && !fs::is_regular_file(a.config, ec))
    throw core::InputError(a.config, 0,
                           "no such file: before --, from-vllm takes a vLLM config file (JSON or flat YAML); a model "
                           "name and `vllm serve`'s flags go after --");
  vllm_config::EngineArgs args =
      a.config.empty() ? vllm_config::EngineArgs{} : vllm_config::parse_config_file(a.config);
  vllm_config::merge(args, vllm_config::parse_cli(a.vllm_args));
  return args;
}

// The mapping as the scenario's description: what each vLLM argument became, and what has none.
// Everything echoed is printable (a control character is refused in TOML) and short: the file's
// description stays far below the loader's bound however long the command line was.
std::string description_of(const FromVllmArgs& a, const vllm_config::Serving& s) {
  constexpr size_t kArgBytesShown = 200, kArgsBytesShown = 4096;
  std::string args;
  for (const std::string& arg : a.vllm_args) args += (args.empty() ? "" : " ") + core::printable(arg, kArgBytesShown);
  std::string d = fmt::format("Made by `ppspec from-vllm` from {}{}{}, read as {} reads them.\nvLLM -> ppspec:\n",
                              a.config.empty() ? "" : core::printable(a.config, kArgBytesShown),
                              a.config.empty() || a.vllm_args.empty() ? "" : " and ",
                              a.vllm_args.empty() ? "" : fmt::format("`{}`", core::printable(args, kArgsBytesShown)),
                              vllm_config::kVllmModelled);
  for (const vllm_config::Mapping& m : s.mapped)
    d += m.vllm.empty()
             ? fmt::format("    {}\n", core::printable(m.scenario))
             : fmt::format("  {} -> {}\n", core::printable(m.vllm, kArgBytesShown), core::printable(m.scenario));
  if (!s.no_counterpart.empty()) d += "No counterpart:\n";
  for (const std::string& n : s.no_counterpart) d += fmt::format("  {}\n", core::printable(n, kArgBytesShown));
  d += "[workload] is ppspec's: a stress workload that reaches the mechanisms the deployment enables.\n";
  // A TOML multi-line basic string: backslashes and triple quotes escaped.
  std::string escaped;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '\\') escaped += '\\';
    if (d[i] == '"' && i + 2 < d.size() && d[i + 1] == '"' && d[i + 2] == '"') escaped += '\\';
    escaped += d[i];
  }
  return escaped;
}

// "[table] key" of line `line` (from 1) of a scenario's text, or "" when it is no `key = value` line.
std::string key_at(const std::string& text, int line) {
  std::istringstream in(text);
  std::string l, table;
  for (int n = 1; std::getline(in, l); ++n) {
    if (l.starts_with("[")) table = l;
    if (n == line) return l.find(" = ") == std::string::npos ? "" : table + " " + l.substr(0, l.find(" = "));
  }
  return "";
}

// The scenario made of the arguments is refused by the loader (a combination ppspec cannot run):
// said of the vLLM argument that made the refused key, not of a line of a file never written.
[[noreturn]] void refused(const core::InputError& e, const std::string& text, const FromVllmArgs& a,
                          const vllm_config::Serving& s) {
  const std::string where = e.line() > 0 ? fmt::format("{}:{}: ", a.out, e.line()) : a.out + ": ";
  const std::string message =
      std::string(e.what()).starts_with(where) ? std::string(e.what()).substr(where.size()) : e.what();
  const std::string key = key_at(text, e.line());
  for (const vllm_config::Mapping& m : s.mapped) {
    if (key.empty() || !m.scenario.starts_with(key + " ")) continue;
    throw core::InputError(m.origin.empty() ? "vLLM's default" : m.origin, 0,
                           fmt::format("{} makes {}, which ppspec cannot run: {}", m.vllm, key, message));
  }
  throw core::InputError(
      "vLLM arguments", 0,
      fmt::format("the scenario they make is refused{}: {}", key.empty() ? "" : " at " + key, message));
}

// A fuzz space around the scenario just written (scenario/fuzzer/around.h): its centre named
// relative to the space file, the ranges up to the scenario's own workload, read back before it
// is written.
void write_space(const FromVllmArgs& a, std::ostream& out) {
  const fs::path centre = fs::absolute(a.out).lexically_relative(fs::absolute(a.space).parent_path());
  const fuzzer::Space around = fuzzer::space_around(a.out);
  std::string quoted_centre;
  core::append_json_string(quoted_centre, centre.generic_string());  // JSON string escapes are valid TOML
  const std::string text = fmt::format(
      "# A fuzz space around {0}: the deployment as `ppspec from-vllm` wrote it, with the workload, the KV\n"
      "# cache's size and the schedule drawn (scenarios/README.md, \"Fuzzing spaces\", lists the keys).\n"
      "#   ppspec fuzz {1} --time 60\n"
      "[space]\naround = {0}\nrequests = [{2}, {3}]\nprompt = [{4}, {5}]\noutput = [{6}, {7}]\n",
      quoted_centre, a.space, around.requests.lo, around.requests.hi, around.prompt.lo, around.prompt.hi,
      around.output.lo, around.output.hi);
  (void)fuzzer::parse_space(text, a.space);
  write_output_file(a.space, text, a.force);
  out << fmt::format("wrote {}: a fuzz space around it (ppspec fuzz {} --time 60)\n", a.space, a.space);
}

}  // namespace

int from_vllm_command(const FromVllmArgs& a, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec from-vllm", [&] {
    vllm_config::WorkloadChoice choice;
    choice.num_requests = a.requests;
    if (!a.cuda_module_loading.empty())
      choice.module_loading = a.cuda_module_loading == "EAGER" || a.cuda_module_loading == "eager"
                                  ? core::ModuleLoading::eager
                                  : core::ModuleLoading::lazy;
    const vllm_config::Serving s = vllm_config::to_serving(read_args(a), choice);
    const std::string name = a.name.empty() ? fs::path(a.out).stem().string() : a.name;
    const std::string text = scenario::to_toml(s.scenario, name, description_of(a, s), scenario::Expectation{});
    const serving::ServingScenario scenario = [&] {  // what is written reads back
      try {
        return scenario::parse_serving(text, a.out);
      } catch (const core::InputError& e) {
        refused(e, text, a, s);
      }
    }();
    if (!a.space.empty() && fs::weakly_canonical(a.space) == fs::weakly_canonical(a.out))
      throw core::InputError(a.space, 0, "--space names the scenario's own file (-o): give the space another name");
    if (!a.space.empty() && !a.force && fs::exists(a.space))
      throw core::InputError(a.space, 0, "already exists (--force overwrites it)");
    write_output_file(a.out, text, a.force);
    out << fmt::format("wrote {}: {}\n", a.out, scenario::summary(s.scenario));
    out << fmt::format("  the engine arguments read as {} reads them\n", vllm_config::kVllmModelled);
    for (const vllm_config::Mapping& m : s.mapped)
      out << (m.vllm.empty() ? fmt::format("      {}\n", core::printable(m.scenario))
                             : fmt::format("  {} -> {}\n", core::printable(m.vllm), core::printable(m.scenario)));
    for (const std::string& n : s.no_counterpart) out << fmt::format("  no counterpart: {}\n", core::printable(n));
    const serving::ServingRun run = serving::run_on_sim(scenario, sim::RunConfig{});
    const core::Finding* first = run.result.findings.empty() ? nullptr : &run.result.findings.front();
    out << fmt::format("  ppspec run of the scenario (seed 1): {}{}\n", core::to_string(run.result.verdict),
                       first == nullptr ? "" : fmt::format(" ({}): {}", first->kind, first->summary));
    if (!a.space.empty()) write_space(a, out);
    out << fmt::format("next: ppspec run {} --seeds 20   (other schedules)\n", a.out);
    return run.result.verdict == core::Verdict::pass ? 0 : 1;
  });
}

}  // namespace ppspec::tools
