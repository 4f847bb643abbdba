#include "fidelity/fr_differential.h"

#include "fidelity/campaign.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "core/finding_kinds.h"
#include "core/rng.h"
#include "generator/seeded.h"
#include "loader/program_loader.h"
#include "program/runner.h"
#include "program/toml_writer.h"
#include "runs/run_options.h"
#include "traces/flight_recorder.h"
#include "traces/fr_writer.h"
#include "traces/jsonl_writer.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

// Whether the simulator's mismatch is only of what a Flight Recorder entry does not hold.
bool of_what_dumps_omit(const core::Finding& f) {
  if (f.kind != core::kKindCollectiveMismatch && f.kind != core::kKindP2pMismatch) return false;
  const auto at = f.summary.find("pairs mismatched operations: ");
  if (at == std::string::npos) return false;
  const std::string why = f.summary.substr(at);
  const bool visible = why.find("kind ") != std::string::npos || why.find("dtype ") != std::string::npos || why.find("count ") != std::string::npos;
  return !visible;
}

// The simulated run, with its trace written where the case's files are.
core::RunResult simulate(const std::string& file, const std::string& trace) {
  const program::Program p = loader::load_program_file(file);
  traces::TraceHeader h;
  h.scenario = p.name;
  h.file = file;
  h.seed = 1;
  h.strategy = "random";
  h.kind = "program";
  traces::JsonlWriter writer(trace, h);
  runs::RunChoices choices;  // what the header above says: seed 1, the default strategy
  choices.seed = 1;
  choices.strategy = sim::StrategySpec{};
  choices.record_decisions = false;
  choices.sink = &writer;
  core::RunResult r = program::run_on_sim(p, runs::sim_options(p, choices));
  writer.finish(r);
  return r;
}

// Where the culprits disagree, in words; empty when they agree or either names none.
std::string culprit_difference(const core::Culprit& sim, const core::Culprit& check, const traces::FrExport& e) {
  if (sim.rank < 0 && check.rank < 0) return "";
  if (sim.rank < 0 || check.rank < 0)
    return fmt::format("only {} names a culprit (rank {})", sim.rank < 0 ? "check" : "the simulator", std::max(sim.rank, check.rank));
  const auto group = e.group_of.find(sim.comm);
  const std::string comm = group == e.group_of.end() ? "?" : group->second;
  if (sim.rank != check.rank || comm != check.comm || sim.p2p != check.p2p || sim.position != check.position)
    return fmt::format("the simulator blames rank {} on '{}' (pg {}) {} #{} ({}), check rank {} on pg {} {} #{} ({})", sim.rank, sim.comm, comm,
                       sim.p2p ? "p2p" : "collective", sim.position, sim.what, check.rank, check.comm, check.p2p ? "p2p" : "collective",
                       check.position, check.what);
  return "";
}

void compare(FrCase& c, const core::RunResult& sim, const core::RunResult& check, const traces::FrExport& e) {
  const core::Finding* s = sim.findings.empty() ? nullptr : &sim.findings.front();
  const core::Finding* k = check.findings.empty() ? nullptr : &check.findings.front();
  c.sim_class = fr_class(s, sim.verdict);
  c.check_class = fr_class(k, check.verdict);
  c.sim_summary = s ? s->summary : "";
  c.check_summary = k ? k->summary : "";
  if (s) c.sim_culprit = s->culprit;
  if (k) c.check_culprit = k->culprit;
  c.invisible = s != nullptr && of_what_dumps_omit(*s);
  if (c.invisible) {
    // Only the operation is visible: both sides posted it and it never completed.
    c.agree = c.check_class != "pass";
    if (!c.agree) c.why = "check passes a run the simulator stopped at a mismatch of what dumps do not record";
    return;
  }
  // Data a send delivered into a connection NCCL wired wrongly at first contact (the simulator
  // notes it, R1/R4): the dumps show a receive that waits for a send that completed.
  c.data_lost = std::any_of(sim.notes.begin(), sim.notes.end(), [](const core::Finding& n) { return n.kind == "p2p-data-lost"; });
  if (c.data_lost && (c.sim_class == "stall" || c.sim_class == "unmatched" || c.sim_class == "cycle")) {
    c.agree = c.check_class == "stall" || c.check_class == "unmatched" || c.check_class == "cycle";
    if (!c.agree) c.why = fmt::format("the simulator's run lost data at first contact; check says {}", c.check_class);
    return;
  }
  // A deadlock through a host call a dump does not record (a module load, a device sync, an event
  // sync: R8), or made only of hosts blocked in NCCL's first-contact setup (R1: each one's call is
  // in its dump as posted), shows in the dumps as communication that waits on nothing posted: a
  // stall, the part of the cycle that runs through communication, or the operation the blocked host
  // never posted.
  if (c.sim_class == "cycle" && s != nullptr && (through_host_call(*s) || (only_first_contacts(*s) && c.check_class != c.sim_class))) {
    c.via_host_call = true;
    c.agree = c.check_class == "cycle" || c.check_class == "stall" || c.check_class == "unmatched";
    if (!c.agree) c.why = fmt::format("the simulator's deadlock runs through a host call; check says {}", c.check_class);
    return;
  }
  if (c.sim_class != c.check_class) {
    c.why = fmt::format("the simulator says {}, check says {}", c.sim_class, c.check_class);
    return;
  }
  // A stall's or a cycle's "culprit" is where it is stuck, not whom to blame: only blame is compared.
  auto blames = [](const core::Culprit& x) { return x.rank >= 0 && x.what != "stalled" && x.what != "cycle"; };
  core::Culprit none;
  c.why = culprit_difference(blames(c.sim_culprit) ? c.sim_culprit : none, blames(c.check_culprit) ? c.check_culprit : none, e);
  c.agree = c.why.empty();
}

}  // namespace

bool through_host_call(const core::Finding& f) {
  for (const core::Site& site : f.sites) {
    if (!site.actor.ends_with(".host") && site.actor.find(".helper") == std::string::npos) continue;
    const bool blocked = site.what.starts_with("blocked in") || site.what.starts_with("blocked on");
    const bool comm = site.what.find("first-contact setup") != std::string::npos || site.what.find("comm init") != std::string::npos ||
                      site.what.find("group") != std::string::npos;
    if (blocked && !comm) return true;
  }
  return false;
}

bool only_first_contacts(const core::Finding& f) {
  return !f.sites.empty() && std::all_of(f.sites.begin(), f.sites.end(), [](const core::Site& site) {
    // A site without an actor is a rank the chain waits for that has nothing left to run.
    return site.actor.empty() || (site.actor.ends_with(".host") && site.what.find("first-contact setup") != std::string::npos);
  });
}

std::string fr_class(const core::Finding* f, core::Verdict v) {
  switch (v) {
    case core::Verdict::pass: return "pass";
    case core::Verdict::fifo_misalignment: return f != nullptr && f->kind == core::kKindUnmatched ? "unmatched" : "misaligned";
    case core::Verdict::deadlock:
      if (f != nullptr && f->culprit.what == "never-posted") return "unmatched";
      return f != nullptr && f->culprit.what == "cycle" ? "cycle" : "stall";
    case core::Verdict::hang: return "stall";
    default: return std::string(core::to_string(v));
  }
}

FrCase run_fr_case(const FrDifferentialOptions& o, uint64_t index) {
  const GeneratedCase g = generate_case(o.out, "frd", o.seed, index, [&](generator::Disturbance d) {
    return generator::flight_recorder_options(o.max_ranks, d);
  });
  FrCase c = compare_on_dumps(g.file, fs::path(g.file).parent_path().string());
  c.index = index;
  c.kind = std::string(generator::to_string(g.kind));
  c.disturbance = g.program.disturbance;
  return c;
}

FrCase compare_on_dumps(const std::string& file, const std::string& dir) {
  FrCase c;
  const program::Program program = loader::load_program_file(file);
  c.name = program.name;
  c.file = file;
  c.ranks = program.num_ranks;
  const std::string trace = (fs::path(dir) / "trace.jsonl").string();
  const core::RunResult sim = simulate(file, trace);
  const traces::FrExport e = traces::flight_recorder_of(trace);
  const bool recorded = std::any_of(e.dumps.begin(), e.dumps.end(), [](const auto& d) { return !d.second.at("entries").empty(); });
  if (!recorded) {
    // No communication was ever posted: a dump holds nothing, and check refuses it (never a pass).
    c.sim_class = fr_class(sim.findings.empty() ? nullptr : &sim.findings.front(), sim.verdict);
    c.check_class = "nothing-recorded";
    c.agree = true;
    return c;
  }
  const fs::path dumps = fs::path(dir) / "dumps";
  traces::write_flight_recorder(e, dumps.string());
  // Both formats, read as `ppspec check` reads them; they must agree with each other too.
  const core::RunResult json = verify::check_flight_recorder(traces::read_fr_dir((dumps / "json").string()).dumps, {verify::FrCalls::async});
  const core::RunResult pickle = verify::check_flight_recorder(traces::read_fr_dir((dumps / "pickle").string()).dumps, {verify::FrCalls::async});
  compare(c, sim, json, e);
  if (json.verdict != pickle.verdict) {
    c.agree = false;
    c.why = fmt::format("the JSON dumps give {}, the pickles {}", core::to_string(json.verdict), core::to_string(pickle.verdict));
  }
  return c;
}

}  // namespace ppspec::fidelity
