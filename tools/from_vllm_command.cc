#include "tools/from_vllm_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>

#include "core/error.h"
#include "fuzzer/serving_case.h"
#include "loader/serving_loader.h"
#include "serving/runner.h"
#include "tools/bad_input.h"
#include "tools/output_file.h"
#include "vllm_config/to_serving.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;

vllm_config::EngineArgs read_args(const FromVllmArgs& a) {
  if (a.config.empty() && a.vllm_args.empty())
    throw core::InputError("ppspec from-vllm", 0, "no vLLM arguments: give a config file, or `vllm serve`'s flags after --");
  vllm_config::EngineArgs args = a.config.empty() ? vllm_config::EngineArgs{} : vllm_config::parse_config_file(a.config);
  vllm_config::merge(args, vllm_config::parse_cli(a.vllm_args));
  return args;
}

// The mapping as the scenario's description: what each vLLM argument became, and what has none.
std::string description_of(const FromVllmArgs& a, const vllm_config::Serving& s) {
  std::string d = fmt::format("Made by `ppspec from-vllm` from {}{}{}.\nvLLM -> ppspec:\n", a.config.empty() ? "" : a.config,
                              a.config.empty() || a.vllm_args.empty() ? "" : " and ",
                              a.vllm_args.empty() ? "" : fmt::format("`{}`", fmt::join(a.vllm_args, " ")));
  for (const vllm_config::Mapping& m : s.mapped) d += m.vllm.empty() ? fmt::format("    {}\n", m.scenario) : fmt::format("  {} -> {}\n", m.vllm, m.scenario);
  if (!s.no_counterpart.empty()) d += "No counterpart:\n";
  for (const std::string& n : s.no_counterpart) d += fmt::format("  {}\n", n);
  d += "[workload] is ppspec's: requests enough to fill the batch, Poisson arrivals, temperature sampling.\n";
  // A TOML multi-line basic string: backslashes and triple quotes escaped.
  std::string escaped;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '\\') escaped += '\\';
    if (d[i] == '"' && i + 2 < d.size() && d[i + 1] == '"' && d[i + 2] == '"') escaped += '\\';
    escaped += d[i];
  }
  return escaped;
}


}  // namespace

int from_vllm_command(const FromVllmArgs& a, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec from-vllm", [&] {
    const vllm_config::Serving s = vllm_config::to_serving(read_args(a), vllm_config::WorkloadChoice{a.requests});
    const std::string name = a.name.empty() ? fs::path(a.out).stem().string() : a.name;
    const std::string text = fuzzer::to_toml(s.scenario, name, description_of(a, s), fuzzer::Expectation{});
    const serving::ServingScenario scenario = loader::parse_serving(text, a.out);  // what is written reads back
    write_output_file(a.out, text, a.force);
    out << fmt::format("wrote {}: {}\n", a.out, fuzzer::summary(s.scenario));
    for (const vllm_config::Mapping& m : s.mapped)
      out << (m.vllm.empty() ? fmt::format("      {}\n", m.scenario) : fmt::format("  {} -> {}\n", m.vllm, m.scenario));
    for (const std::string& n : s.no_counterpart) out << fmt::format("  no counterpart: {}\n", n);
    const serving::ServingRun run = serving::run_on_sim(scenario, serving::RunOptions{});
    const core::Finding* first = run.result.findings.empty() ? nullptr : &run.result.findings.front();
    out << fmt::format("  ppspec run of the scenario (seed 1): {}{}\n", core::to_string(run.result.verdict),
                       first == nullptr ? "" : fmt::format(" ({}): {}", first->kind, first->summary));
    out << fmt::format("next: ppspec run {} --seeds 20   (other schedules)\n", a.out);
    return run.result.verdict == core::Verdict::pass ? 0 : 1;
  });
}

}  // namespace ppspec::tools
