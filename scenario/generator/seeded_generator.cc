// The seeded front-end's program around its rounds: ranks, streams, communicators, configuration,
// the disturbance, and the description. Draws in the order the first version made them.
#include <algorithm>
#include <iterator>
#include <fmt/format.h>

#include "core/assert.h"
#include "scenario/generator/seeded_generator.h"

namespace ppspec::generator {

namespace seeded {

Generator::Generator(uint64_t seed, const std::string& name, const GeneratorOptions& opts) : rng_(seed), opts_(opts) {
  out_.program.name = name;
  out_.program.file = name + ".toml";
}

void Generator::declare() {
  program::Program& p = out_.program;
  const int max_ranks = std::clamp(opts_.max_ranks, 2, 8);
  const bool two = percent(opts_.two_rank_percent) || max_ranks == 2;
  p.num_ranks = two ? 2 : 3 + static_cast<int>(below(static_cast<uint64_t>(max_ranks - 2)));
  if (p.num_ranks > 2) feature(fmt::format("{} ranks", p.num_ranks));
  main_streams_ = 1 + below(3);
  p.streams.clear();
  for (size_t i = 0; i < main_streams_; ++i) p.streams.push_back(fmt::format("s{}", i));
  if (main_streams_ > 1) feature("several streams");
  declare_comms();
  draft_ = Draft(p.num_ranks);
  events_.assign(static_cast<size_t>(p.num_ranks), 0);
  if (percent(20)) {
    p.streams.push_back("aux");  // the second thread's own stream: it never meets a capture
    feature("two host threads");
    for (core::RankId r = 0; r < p.num_ranks; ++r)
      draft_.ranks[static_cast<size_t>(r)].has_second = r == 0 || percent(50);
  }
}

// "world", and up to two more of at least two members each.
void Generator::declare_comms() {
  program::Program& p = out_.program;
  program::CommDecl world{"world", {}};
  for (core::RankId r = 0; r < p.num_ranks; ++r) world.ranks.push_back(r);
  p.comms.push_back(world);
  const uint64_t extra = below(3);
  for (uint64_t i = 0; i < extra; ++i) {
    program::CommDecl c{fmt::format("c{}", i + 1), {}};
    for (core::RankId r = 0; r < p.num_ranks; ++r)
      if (p.num_ranks == 2 || percent(60)) c.ranks.push_back(r);
    for (core::RankId r = 0; c.ranks.size() < 2; ++r)
      if (std::find(c.ranks.begin(), c.ranks.end(), r) == c.ranks.end()) c.ranks.push_back(r);
    std::sort(c.ranks.begin(), c.ranks.end());
    p.comms.push_back(c);
  }
  if (p.comms.size() > 1) feature("several communicators");
}

void Generator::configure() {
  core::WorldConfig& c = out_.program.config;
  // Only what the real backend applies varies; the simulator-only knobs keep their defaults, which
  // are today's hardware (DESIGN §3), so that a disagreement is the simulator's, not a knob's.
  const uint64_t loading = below(10);
  c.module_loading =
      loading < 5 ? core::ModuleLoading::lazy : (loading < 8 ? core::ModuleLoading::eager : core::ModuleLoading::jit);
  feature(fmt::format("{} loading", core::to_string(c.module_loading)));
  c.runtime_connect = !percent(15);
  if (!c.runtime_connect) feature("runtime_connect = false");
  out_.program.hang_timeout = 4 * core::kSec;
}

// One rank issues two rounds of different communicators in the other order than its peers.
void Generator::invert() {
  const auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(out_.program.num_ranks)));
  const std::string said = invert_order(RankUnits{draft_.units(r), r, out_.program});
  if (said.empty()) return;
  out_.disturbance = said;
  out_.disturbed_rank = r;
  feature("inverted order");
}

// One rank gets one communication round wrong: dropped, posted twice, another count, dtype, root
// or peer.
void Generator::mutate(std::optional<Disturbance> kind) {
  const int n = out_.program.num_ranks;
  auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(n)));
  std::vector<size_t> comm_units;  // a graph's capture is not repeated: a graph is captured once
  // A disturbance asked for lands on the next rank that communicates; a random one may miss.
  for (int tries = 0; tries < (kind ? n : 1) && comm_units.empty(); ++tries) {
    if (tries > 0) r = (r + 1) % n;
    const std::vector<Unit>& mine = draft_.units(r);
    for (size_t i = 0; i < mine.size(); ++i)
      if (!mine[i].comm.empty() && mine[i].ops.front().type != program::OpType::capture_begin) comm_units.push_back(i);
  }
  if (comm_units.empty()) return;
  const size_t at = comm_units[below(comm_units.size())];
  if (!kind) kind = kRandomMutations[below(std::size(kRandomMutations))];
  out_.disturbance = generator::disturb(RankUnits{draft_.units(r), r, out_.program}, at, *kind,
                                        [this](size_t k) { return static_cast<size_t>(below(k)); });
  out_.disturbed_rank = r;
  feature("mutated");
}

bool Generator::communicates() const {
  return std::any_of(draft_.ranks.begin(), draft_.ranks.end(), [](const RankDraft& d) {
    return std::any_of(d.main.begin(), d.main.end(), [](const Unit& u) { return !u.comm.empty(); });
  });
}

void Generator::disturb() {
  if (!opts_.disturb) {
    if (percent(30)) invert();
    if (percent(25)) mutate(std::nullopt);
  } else if (!communicates()) {
    // A disturbance needs communication to disturb: one collective round first.
    push(collective(out_.program.comms.front()), fmt::format("r{}", draft_rounds_));
    *opts_.disturb == Disturbance::invert ? invert() : mutate(opts_.disturb);
    if (out_.disturbance.empty()) mutate(Disturbance::count);
  } else if (*opts_.disturb == Disturbance::invert) {
    invert();
    if (out_.disturbance.empty()) mutate(Disturbance::count);  // no two rounds of different communicators to invert
  } else {
    mutate(opts_.disturb);
  }
}

void Generator::finish() {
  generator::finish(draft_, ThreadEnds{}, out_.program);
  out_.features.assign(features_.begin(), features_.end());
  program::Program& p = out_.program;
  p.description = fmt::format("Generated by `ppspec fidelity`. Exercises: {}.", fmt::join(out_.features, ", "));
  if (!out_.disturbance.empty()) p.description += fmt::format(" Disturbed: {}.", out_.disturbance);
}

GeneratedProgram Generator::run() {
  declare();
  configure();
  draft_rounds_ = 2 + static_cast<int>(below(static_cast<uint64_t>(std::max(1, opts_.max_rounds - 1))));
  for (int i = 0; i < draft_rounds_; ++i) add_round(i);
  disturb();
  finish();
  PPSPEC_ASSERT(out_.program.ranks.size() == static_cast<size_t>(out_.program.num_ranks), "one op list per rank");
  return std::move(out_);
}

}  // namespace seeded

GeneratorOptions flight_recorder_options(int max_ranks, Disturbance d) {
  GeneratorOptions g;
  g.max_ranks = max_ranks;
  g.two_rank_percent = 40;
  g.disturb = d;
  g.labels = false;
  g.graphs_and_usage_errors = false;
  return g;
}

GeneratorOptions nccl_profiler_options(int max_ranks, Disturbance d) {
  GeneratorOptions g = flight_recorder_options(max_ranks, d);
  g.graphs_and_usage_errors = true;
  g.usage_errors = false;
  return g;
}

GeneratedProgram generate_program(uint64_t seed, const std::string& name, const GeneratorOptions& opts) {
  return seeded::Generator(seed, name, opts).run();
}

}  // namespace ppspec::generator
