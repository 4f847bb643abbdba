#include "tools/replay_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <ostream>
#include <unistd.h>
#include <variant>

#include "core/error.h"
#include "core/printable.h"
#include "program/runner.h"
#include "runs/execute.h"
#include "serving/runner.h"
#include "tools/bad_input.h"
#include "tools/run_support.h"
#include "tools/trace_scenario.h"
#include "traces/jsonl_writer.h"
#include "traces/trace_reader.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The run again, under the recorded schedule, into `out_trace` with the recording's header.
void rerun(const Loaded& l, const traces::TraceHeader& h, const std::vector<uint32_t>& decisions,
           const std::string& out_trace) {
  traces::JsonlWriter writer(out_trace, h);
  runs::RunChoices choices;
  choices.seed = h.seed;
  // The recorded strategy; one this build cannot read leaves the default, which the recorded
  // schedule overrides anyway (only the oracles' reference runs draw from it).
  choices.strategy = core::parse_strategy(h.strategy).value_or(core::StrategySpec{});
  choices.replay = decisions;
  choices.sink = &writer;
  writer.finish(runs::execute(l.scenario, choices).result());
}

}  // namespace

int replay_command(const ReplayArgs& args, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec", [&] {
    traces::TraceReader reader(args.trace, traces::TraceReader::Options{});
    const traces::TraceHeader h = reader.header();
    if (h.backend != traces::TraceBackend::sim)
      throw core::InputError(args.trace, 1,
                             fmt::format("a {} trace: hardware records no schedule to replay; check it with "
                                         "`ppspec check`",
                                         traces::to_string(h.backend)));
    while (reader.next() != nullptr) {}
    if (!reader.trailer())
      throw core::InputError(args.trace, reader.line(), "no trailer: no recorded schedule to replay");
    const Loaded l = trace_scenario(h, args.trace, args.scenario, err);
    // The process id keeps replays of one scenario that run at once (ctest, a user's shell loop) off each other's file.
    const fs::path again =
        fs::temp_directory_path() / fmt::format("ppspec-replay-{}-{}.jsonl", ::getpid(), file_safe(h.scenario));
    rerun(l, h, reader.trailer()->decisions, again.string());
    const std::vector<std::string> a = lines_of(args.trace), b = lines_of(again.string());
    fs::remove(again);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      if (i < a.size() && i < b.size() && a[i] == b[i]) continue;
      out << fmt::format("FAIL {}  {}  verdict nondeterminism (replay-diverged): line {} differs\n",
                         core::printable(h.scenario), core::printable(args.trace), i + 1);
      out << fmt::format("    recorded: {}\n    replayed: {}\n",
                         i < a.size() ? core::printable(a[i], 400) : "(the end)",
                         i < b.size() ? core::printable(b[i], 400) : "(the end)");
      const bool trailer = i + 1 == a.size() && i + 1 == b.size();
      out << (trailer ? "    the same events gave another verdict, schedule or findings (the trailer records each "
                        "finding's kind, "
                        "summary and sites): the checks depend on something outside the seed, or the code changed "
                        "since the recording\n"
                      : "    the same scenario, seed and schedule gave another event stream: the simulator or the "
                        "engine depends on "
                        "something outside the seed (time, addresses, unordered iteration), or the code changed since "
                        "the recording\n");
      return 1;
    }
    out << fmt::format(
        "ok   {}  {}  replayed byte for byte: {} events, the run's own verdict {} and {} finding(s), {} recorded "
        "scheduling decisions\n",
        core::printable(h.scenario), core::printable(args.trace), reader.events_read(),
        core::to_string(reader.trailer()->verdict), reader.trailer()->findings.size(),
        reader.trailer()->decisions.size());
    return 0;
  });
}

}  // namespace ppspec::tools
