#include "verify/fidelity/fr_differential.h"

#include "verify/fidelity/campaign.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/rng.h"
#include "scenario/generator/seeded.h"
#include "scenario/program_loader.h"
#include "program/runner.h"
#include "program/toml_writer.h"
#include "runs/execute.h"
#include "traces/flight_recorder.h"
#include "traces/fr_writer.h"
#include "traces/jsonl_writer.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

// Whether the simulator's mismatch is only of what a Flight Recorder entry does not hold.
bool of_what_dumps_omit(const core::Finding& f) {
  if (f.kind != core::FindingKind::collective_mismatch && f.kind != core::FindingKind::p2p_mismatch) return false;
  const core::OpFields& m = f.mismatched;
  return m.any() && !m.kind && !m.dtype && !m.count;
}

// The simulated run, with its trace written where the case's files are.
core::RunResult simulate(const std::string& file, const std::string& trace) {
  const program::Program p = scenario::load_program_file(file);
  traces::TraceHeader h;
  h.scenario = p.name;
  h.file = file;
  h.seed = 1;
  h.strategy = "random";
  h.kind = core::ScenarioKind::program;
  traces::JsonlWriter writer(trace, h);
  runs::RunChoices choices;  // what the header above says: seed 1, the default strategy
  choices.seed = 1;
  choices.strategy = core::StrategySpec{};
  choices.record_decisions = false;
  choices.sink = &writer;
  core::RunResult r = runs::execute(p, choices);
  writer.finish(r);
  return r;
}

// Where the simulator's culprit operation stands in the dumps (fidelity compares check's positions,
// which count PyTorch's calls, with it): the blamed rank's operation, or for one never posted, the
// waiting side's. Nullopt where the culprit names no operation.
std::optional<traces::FrPlaced> placed_culprit(const core::Culprit& c, const traces::FrExport& e) {
  if (c.rank < 0 || c.position < 0 || c.comm.empty()) return std::nullopt;
  const bool never = c.what == core::Blame::never_posted;
  if (c.p2p) {
    const traces::FrPlaceKey k = never ? traces::FrPlaceKey{c.peer, c.comm, true, c.rank, c.position}
                                       : traces::FrPlaceKey{c.rank, c.comm, true, c.peer, c.position};
    const auto it = e.placed.find(k);
    return it == e.placed.end() ? std::nullopt : std::optional<traces::FrPlaced>(it->second);
  }
  if (const auto it = e.placed.find({c.rank, c.comm, false, -1, c.position}); it != e.placed.end() && !never)
    return it->second;
  for (const auto& [k, placed] : e.placed)  // never posted by the culprit: another member's
    if (std::get<1>(k) == c.comm && !std::get<2>(k) && std::get<4>(k) == c.position && placed.recorded) return placed;
  return std::nullopt;
}

// Whether the dumps hold every operation of the simulator's finding (its sites: the mismatched
// pairing's operations, a cycle's). A ring may have dropped one of them, or a dump been taken before.
bool pairing_recorded(const core::Finding& f, const traces::FrExport& e) {
  // A collective's pairing is every member's operation at that place, listed in the sites or not.
  if (f.kind == core::FindingKind::collective_mismatch && !f.sites.empty() && f.sites.front().cseq >= 0)
    for (const auto& [k, placed] : e.placed)
      if (std::get<1>(k) == f.sites.front().comm && !std::get<2>(k) && std::get<4>(k) == f.sites.front().cseq &&
          !placed.recorded)
        return false;
  for (const core::Site& site : f.sites) {
    if (site.rank < 0 || site.cseq < 0) continue;
    for (auto it = e.placed.lower_bound({site.rank, site.comm, false, INT_MIN, INT64_MIN});
         it != e.placed.end() && std::get<0>(it->first) == site.rank && std::get<1>(it->first) == site.comm; ++it)
      if (std::get<4>(it->first) == site.cseq && !it->second.recorded) return false;
  }
  return true;
}

// Where the culprits disagree, in words; empty when they agree. The simulator's position is
// translated to the dumps' (a call of several NCCL operations is one position there).
std::string culprit_difference(const core::Culprit& sim, const core::Culprit& check, const traces::FrExport& e) {
  const auto group = e.group_of.find(sim.comm);
  const std::string comm = group == e.group_of.end() ? "?" : group->second;
  const std::optional<traces::FrPlaced> at = placed_culprit(sim, e);
  const int64_t position = at ? at->position : sim.position;
  const bool p2p = sim.p2p && !(at && at->fused);
  if (sim.rank != check.rank || comm != check.comm || p2p != check.p2p || position != check.position)
    return fmt::format(
        "the simulator blames rank {} on '{}' (pg {}) {} #{} (#{} in the dumps; {}), check rank {} on pg {} {} #{} "
        "({})",
        sim.rank, sim.comm, comm, sim.p2p ? "p2p" : "collective", sim.position, position, sim.what, check.rank,
        check.comm, check.p2p ? "p2p" : "collective", check.position, check.what);
  return "";
}

// The simulator's answer, root cause first: a program that goes on past a mismatch as NCCL does
// (on_mismatch = "emulate") notes the mismatched pairing and ends later, in what it caused (a
// hang, a cycle); the first mismatched pairing is the cause.
core::RunResult root_first(core::RunResult r) {
  const auto first = std::find_if(r.notes.begin(), r.notes.end(),
                                  [](const core::Finding& n) { return n.verdict == core::Verdict::fifo_misalignment; });
  if (first == r.notes.end()) return r;
  r.findings.insert(r.findings.begin(), *first);
  r.verdict = core::Verdict::fifo_misalignment;
  return r;
}

// The rank a generated program was disturbed on, as its description says ("Disturbed: rank 3 ...").
core::RankId disturbed_rank_of(const program::Program& p) {
  const std::string key = "Disturbed: rank ";
  const auto at = p.description.find(key);
  if (at == std::string::npos) return -1;
  int r = 0;
  size_t i = at + key.size();
  if (i >= p.description.size() || !std::isdigit(static_cast<unsigned char>(p.description[i]))) return -1;
  for (; i < p.description.size() && std::isdigit(static_cast<unsigned char>(p.description[i])); ++i)
    r = r * 10 + (p.description[i] - '0');
  return r;
}

bool has_note(const core::RunResult& r, core::FindingKind kind) {
  return std::any_of(r.notes.begin(), r.notes.end(), [kind](const core::Finding& n) { return n.kind == kind; });
}

// Where the family's dumps cannot show the simulator's failure, check may say it does not see it —
// pass, operations in flight, a stall it cannot date — but never another cause: Gloo's dumps
// record no progress and no p2p; a snapshot may be taken before the failure; a wrapped ring may
// leave a channel's sides unaligned.
bool unseen_allowed(generator::FrShape shape, const core::RunResult& check, const std::string& check_class) {
  const core::Finding* f = check.findings.empty() ? nullptr : &check.findings.front();
  const bool undated = f != nullptr && f->culprit.what == core::Blame::undated;
  switch (shape) {
    case generator::FrShape::gloo: return check_class == "pass";
    case generator::FrShape::snapshot: return check_class == "pass" || undated || (f != nullptr && f->culprit.rank < 0);
    case generator::FrShape::wrapped:
      return has_note(check, core::FindingKind::p2p_not_aligned) && (check_class == "pass" || check_class == "stall");
    default: return false;
  }
}

// The same culprit, or none named by check (an honest "cannot tell"). A culprit check names must be
// the simulator's (rank, communicator, position), or the rank the program was disturbed on.
void compare_culprits(FrCase& c, const traces::FrExport& e) {
  auto blames = [](const core::Culprit& x) {
    return x.rank >= 0 && x.what != core::Blame::stalled && x.what != core::Blame::cycle &&
           x.what != core::Blame::undated;
  };
  const bool sim_names = blames(c.sim_culprit), check_names = blames(c.check_culprit);
  if (!check_names) {
    c.cannot_tell = sim_names;
    c.agree = true;
    return;
  }
  if (c.check_culprit.rank == c.disturbed_rank) {
    c.agree = true;
    return;
  }
  c.why = sim_names
              ? culprit_difference(c.sim_culprit, c.check_culprit, e)
              : fmt::format(
                    "check blames rank {}, where the simulator names no one and the program was disturbed on rank {}",
                    c.check_culprit.rank, c.disturbed_rank);
  c.agree = c.why.empty();
}

// What the family's dumps cannot show, decided before the cause is compared: the failure not in
// them, rings that dropped where the ranks are stuck, a deadlock through a host call. True when
// decided (c.agree says how).
bool decided_by_what_dumps_omit(FrCase& c, const core::Finding* s, const core::Finding* k,
                                const core::RunResult& check) {
  if (c.sim_class != c.check_class && unseen_allowed(c.shape, check, c.check_class)) {
    c.unseen = true;
    c.agree = true;
    return true;
  }
  // A hang whose stuck ranks' rings dropped every completed call: check says it cannot tell where
  // they are stuck, which is honest wherever the run did hang.
  const bool hung = c.sim_end_class == "cycle" || c.sim_end_class == "stall" || c.sim_end_class == "unmatched";
  if (k != nullptr && k->culprit.what == core::Blame::dropped && hung) {
    c.cannot_tell = true;
    c.agree = true;
    return true;
  }
  // A deadlock through a host call the dumps cannot show, whatever their rings kept (below).
  if (c.sim_class == "cycle" && s != nullptr && through_host_call(*s) &&
      dumps_see_host_cycle(*s, c.sim_class, c.check_class)) {
    c.via_host_call = true;
    c.agree = true;
    return true;
  }
  return false;
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
    // Only the operation is visible: both sides posted it and, where the run then hung, it never
    // completed; a run that went on past it (emulated) to its end leaves nothing to see.
    c.agree = c.check_class != "pass" || c.sim_end_class == "pass" || unseen_allowed(c.shape, check, c.check_class);
    c.unseen = c.agree && c.check_class == "pass";
    if (!c.agree) c.why = "check passes a run the simulator stopped at a mismatch of what dumps do not record";
    return;
  }
  if (decided_by_what_dumps_omit(c, s, k, check)) return;
  // The cause is not in the dumps (a ring dropped it, a snapshot came before it): check tells what
  // they show — but no pass on a run that hung, and no culprit of its own.
  if (const auto at = s != nullptr ? placed_culprit(s->culprit, e) : std::nullopt;
      (at && !at->recorded) || (s != nullptr && !pairing_recorded(*s, e))) {
    c.unseen = true;
    c.agree = !(c.check_class == "pass" && c.sim_end_class != "pass");
    if (!c.agree)
      c.why = fmt::format("the cause is not in the dumps, and check passes a run that ended {}", c.sim_end_class);
    if (c.agree && c.check_class != "pass" && c.check_class != "stall") compare_culprits(c, e);
    return;
  }
  // Data a send delivered into a connection NCCL wired wrongly at first contact (the simulator
  // notes it, R1/R4): the dumps show a receive that waits for a send that completed.
  c.data_lost = std::any_of(sim.notes.begin(), sim.notes.end(),
                            [](const core::Finding& n) { return n.kind == core::FindingKind::p2p_data_lost; });
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
  if (c.sim_class == "cycle" && s != nullptr &&
      (through_host_call(*s) || (only_first_contacts(*s) && c.check_class != c.sim_class))) {
    c.via_host_call = true;
    c.agree = dumps_see_host_cycle(*s, c.sim_class, c.check_class) ||
              (c.check_class == "misaligned" && (c.check_culprit.rank < 0 || c.check_culprit.rank == c.disturbed_rank));
    if (!c.agree)
      c.why = fmt::format("the simulator's deadlock runs through a host call; check says {}", c.check_class);
    return;
  }
  // Check names the cause of what the simulator ended in: a misplaced operation (of the rank the
  // program was disturbed on, or of a rank it cannot tell), where the simulator reports the hang it
  // led to.
  const bool hang = c.sim_class == "cycle" || c.sim_class == "stall" || c.sim_class == "unmatched";
  if (hang && c.check_class == "misaligned" && (c.check_culprit.rank < 0 || c.check_culprit.rank == c.disturbed_rank)) {
    c.cannot_tell = c.check_culprit.rank < 0;
    c.agree = true;
    return;
  }
  if (c.sim_class != c.check_class) {
    c.why = fmt::format("the simulator says {}, check says {}", c.sim_class, c.check_class);
    return;
  }
  compare_culprits(c, e);
}

}  // namespace

bool through_host_call(const core::Finding& f) {
  for (const core::Site& site : f.sites) {
    if (!site.actor.ends_with(".host") && site.actor.find(".helper") == std::string::npos) continue;
    // A host call a dump records nothing of; NCCL's own setup calls (first contact, comm init) it does.
    switch (site.wait) {
      case core::SiteWait::stream_sync:
      case core::SiteWait::event_sync:
      case core::SiteWait::module_load:
      case core::SiteWait::device_drain:
      case core::SiteWait::context_lock: return true;
      default: break;
    }
  }
  return false;
}

bool dumps_see_host_cycle(const core::Finding& sim, const std::string& sim_class, const std::string& dumps_class) {
  return sim_class == "cycle" && (through_host_call(sim) || only_first_contacts(sim)) &&
         (dumps_class == "cycle" || dumps_class == "stall" || dumps_class == "unmatched");
}

bool only_first_contacts(const core::Finding& f) {
  return !f.sites.empty() && std::all_of(f.sites.begin(), f.sites.end(), [](const core::Site& site) {
    // A site without an actor is a rank the chain waits for that has nothing left to run.
    return site.actor.empty() || (site.actor.ends_with(".host") && site.wait == core::SiteWait::connect);
  });
}

std::string fr_class(const core::Finding* f, core::Verdict v) {
  switch (v) {
    case core::Verdict::pass: return "pass";
    case core::Verdict::fifo_misalignment:
      return f != nullptr && f->kind == core::FindingKind::unmatched ? "unmatched" : "misaligned";
    case core::Verdict::deadlock:
      if (f != nullptr && f->culprit.what == core::Blame::never_posted) return "unmatched";
      return f != nullptr && f->culprit.what == core::Blame::cycle ? "cycle" : "stall";
    // A starved request is the scheduler's: every operation posted completes, none is stuck.
    case core::Verdict::hang: return f != nullptr && f->kind == core::FindingKind::starvation ? "starvation" : "stall";
    default: return std::string(core::to_string(v));
  }
}

traces::FrWriteOptions fr_write_options(generator::FrShape shape, uint64_t index, int64_t start_ns, int64_t end_ns) {
  using generator::FrShape;
  traces::FrWriteOptions w;
  if (shape == FrShape::async) return w;  // started states (TORCH_NCCL_ENABLE_TIMING), every record
  w.timing = false;                       // PyTorch's default
  w.fast_coalescing = index % 2 == 0;     // the fast path and _coalescing_manager(device=...) in turn
  if (shape == FrShape::wrapped) w.buffer = 24 + index * 37 % 97;
  if (shape == FrShape::gloo) w.backend = traces::FrBackend::gloo;
  if (shape == FrShape::snapshot) {
    w.at = start_ns + (end_ns - start_ns) * static_cast<int64_t>(1 + index % 9) / 10;
    w.skew = 3 * core::kUs;
    w.poll = 200 * core::kUs;  // a few steps, as PyTorch's 100 ms is to a real job's steps
  }
  return w;
}

verify::FrCalls fr_read_calls(generator::FrShape shape) {
  return shape == generator::FrShape::async ? verify::FrCalls::async : verify::FrCalls::synchronous;
}

FrCase run_fr_case(const FrDifferentialOptions& o, uint64_t index) {
  GeneratedCase g;
  if (o.shape == generator::FrShape::async) {
    g = generate_case(o.out, "frd", o.seed, index,
                      [&](generator::Disturbance d) { return generator::flight_recorder_options(o.max_ranks, d); });
  } else {
    const std::optional<generator::Disturbance> d = generator::fr_shape_disturbance(index);
    g = generate_shape_case(o.out, fmt::format("frd-{}", generator::to_string(o.shape)), o.seed, index,
                            [&](uint64_t seed, const std::string& name) {
                              return generator::generate_fr_shape(o.shape, seed, name, d, o.max_ranks);
                            });
    g.kind_name = d ? std::string(generator::to_string(*d)) : "none";
  }
  FrCase c = compare_on_dumps(g.file, fs::path(g.file).parent_path().string(), o.shape, index);
  c.index = index;
  c.kind = g.kind_name.empty() ? std::string(generator::to_string(g.kind)) : g.kind_name;
  c.disturbance = g.program.disturbance;
  PPSPEC_ASSERT(c.disturbed_rank == g.program.disturbed_rank,
                "case {}: the description names rank {}, the generator {}", c.name, c.disturbed_rank,
                g.program.disturbed_rank);
  return c;
}

FrCase compare_on_dumps(const std::string& file, const std::string& dir, generator::FrShape shape, uint64_t index) {
  FrCase c;
  c.shape = shape;
  const program::Program program = scenario::load_program_file(file);
  c.name = program.name;
  c.file = file;
  c.ranks = program.num_ranks;
  c.disturbed_rank = disturbed_rank_of(program);
  const std::string trace = (fs::path(dir) / "trace.jsonl").string();
  const core::RunResult ran = simulate(file, trace);
  // How the run ended, past the mismatches it went on through: stuck somewhere, or at its end.
  const auto stuck = std::find_if(ran.findings.begin(), ran.findings.end(),
                                  [](const core::Finding& f) { return f.verdict != core::Verdict::fifo_misalignment; });
  c.sim_end_class = stuck == ran.findings.end() ? "pass" : fr_class(&*stuck, stuck->verdict);
  const core::RunResult sim = root_first(ran);
  // A live dump is taken while every rank is at work: after each has made its first call.
  const traces::FrRun run = traces::read_fr_run(trace);
  int64_t started = 0;
  for (const auto& [rank, posts] : run.posts)
    if (!posts.empty()) started = std::max(started, posts.front().posted);
  const traces::FrExport e =
      traces::flight_recorder_of(run, fr_write_options(shape, index, started, sim.stats.sim_time));
  const bool recorded =
      std::any_of(e.dumps.begin(), e.dumps.end(), [](const auto& d) { return !d.second.at("entries").empty(); });
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
  const verify::FrCheckOptions read{fr_read_calls(shape)};
  const core::RunResult json =
      verify::check_flight_recorder(traces::read_fr_dir((dumps / "json").string()).dumps, read);
  const core::RunResult pickle =
      verify::check_flight_recorder(traces::read_fr_dir((dumps / "pickle").string()).dumps, read);
  compare(c, sim, json, e);
  if (json.verdict != pickle.verdict) {
    c.agree = false;
    c.why = fmt::format("the JSON dumps give {}, the pickles {}", core::to_string(json.verdict),
                        core::to_string(pickle.verdict));
  }
  return c;
}

}  // namespace ppspec::fidelity
