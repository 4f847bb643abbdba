// Fuzz target: the trace reader and every checker `ppspec check` runs over a trace
// (tools/check_command.cc): the pairing and hang checker, and the serving monitors. One input is
// the text of one JSON Lines trace. Every input must give a result or be rejected with
// core::InputError; a crash, a sanitizer report, an internal error or any other exception is a bug
// (libfuzzer/README.md).
//
// `ppspec check` configures the monitors from the scenario a serving trace names; here the
// scenario is fixed, one of two by the header's seed (even: pp 2 tp 1 K 5, odd: pp 2 tp 2 K 5), and
// every trace goes through the monitors, whatever its header's kind: in `ppspec check` any event
// sequence reaches them under a serving header.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "engine/checkpoint.h"
#include "scenario/serving_loader.h"
#include "traces/trace_reader.h"
#include "verify/findings.h"
#include "verify/monitors/serving_monitors.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::fuzz {
namespace {

serving::ServingScenario load_fixed(const std::string& relative) {
  // fmt, not operator+: gcc 12 under ASan at -O1 warns (-Warray-bounds) about the inlined copies of
  // a concatenation here, falsely.
  const std::string path = fmt::format("{}/{}", PPSPEC_SOURCE_DIR, relative);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "fuzz_trace: cannot read %s\n", path.c_str());
    std::abort();
  }
  return scenario::parse_serving(text.str(), path);
}

struct Fixed {
  serving::ServingScenario scenario;
  verify::ServingFacts facts;
  explicit Fixed(const std::string& relative)
      : scenario(load_fixed(relative)),
        facts(verify::serving_facts(scenario.config, engine::make_checkpoint(scenario.config.model))) {}
};

const Fixed& fixed(uint64_t seed) {
  static const Fixed tp1("scenarios/serving/pp2_tp1_k5.toml");
  static const Fixed tp2("scenarios/serving/pp2_tp2_k5.toml");
  return seed % 2 == 0 ? tp1 : tp2;
}

// What check_command.cc's check_one does with one trace, its report left out.
core::RunResult check(std::istream& in) {
  traces::TraceReader reader(in, "fuzz.jsonl", traces::TraceReader::Options{});
  const Fixed& f = fixed(reader.header().seed);
  std::vector<core::Finding> found;
  verify::ServingMonitors monitors(f.facts, [&found](core::Finding finding) { found.push_back(std::move(finding)); });
  verify::TraceChecker checker;
  while (const core::Event* e = reader.next()) {
    checker.on_event(*e);
    monitors.on_event(*e);
  }
  core::RunResult checked = checker.result();
  core::RunResult merged;
  merged.findings = std::move(found);
  merged.stats = checked.stats;
  std::vector<core::Finding> recorded = std::move(checked.findings);
  for (core::Finding& n : checked.notes) recorded.push_back(std::move(n));
  verify::settle_verdict(merged, std::move(recorded), f.scenario.runtime.strict);
  return merged;
}

}  // namespace
}  // namespace ppspec::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)ppspec::fuzz::fixed(0);
  (void)ppspec::fuzz::fixed(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)ppspec::fuzz::check(in);
  } catch (const ppspec::core::InputError&) {}
  return 0;
}
