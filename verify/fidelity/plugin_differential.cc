#include "verify/fidelity/plugin_differential.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <variant>

#include "core/error.h"
#include "core/finding_kinds.h"
#include "core/rng.h"
#include "verify/fidelity/campaign.h"
#include "verify/fidelity/fr_differential.h"
#include "scenario/generator/seeded.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "watch/nccl_profiler/sim_adapter.h"
#include "program/runner.h"
#include "program/toml_writer.h"
#include "runs/execute.h"
#include "serving/runner.h"
#include "watch/line_sources.h"
#include "watch/watcher.h"

namespace ppspec::fidelity {
namespace {

namespace fs = std::filesystem;

// What the simulator's run tells NCCL of, counted as the plugin records it: an all_to_all is a
// send and a recv per member; a one-member communicator's collective is nothing.
class VisibleOps final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override {
    if (e.kind == core::EventKind::comm_init) size_[std::string(e.comm)] = e.value;
    if (!e.has_op || (e.kind != core::EventKind::op_posted && e.kind != core::EventKind::op_completed)) return;
    const int64_t size = size_[std::string(e.comm)];
    if (e.kind == core::EventKind::op_posted && !core::is_p2p(e.op.kind) && e.cseq >= 0)
      kinds_[std::string(e.comm)][e.cseq] = e.op.kind;
    if (!core::is_p2p(e.op.kind) && size <= 1) return;
    const uint64_t n = e.op.kind == core::OpKind::all_to_all ? 2 * static_cast<uint64_t>(size) : 1;
    (e.kind == core::EventKind::op_posted ? posted : completed) += n;
  }
  uint64_t posted = 0, completed = 0;

  // Collective `cseq` of `comm` as NCCL numbers its collectives: NCCL runs an all_to_all as grouped
  // sends and receives, so the collectives a profiler sees (and the watcher numbers) skip them.
  int64_t nccl_collective_index(const std::string& comm, int64_t cseq) const {
    const auto it = kinds_.find(comm);
    if (it == kinds_.end()) return cseq;
    int64_t skipped = 0;
    for (const auto& [at, kind] : it->second) {
      if (at >= cseq) break;
      skipped += kind == core::OpKind::all_to_all ? 1 : 0;
    }
    return cseq - skipped;
  }

 private:
  std::map<std::string, int64_t> size_;
  std::map<std::string, std::map<int64_t, core::OpKind>> kinds_;  // comm -> collective slot -> kind
};

// The watcher, fed after every call into the plugin: the lines are in the files then.
struct LiveWatch {
  LiveWatch(const fs::path& dir) : watcher((dir / "job.jsonl").string()), inbox((dir / "traces").string()) {}
  void on_flush(core::Time t) {
    inbox.poll(watcher, 0);
    for (watch::WatchReport& r : watcher.take_reports())
      if (first_at < 0) {
        first_at = t;
        first = std::move(r);
      }
  }
  watch::Watcher watcher;
  watch::FolderInbox inbox;
  core::Time first_at = -1;
  watch::WatchReport first;
};

using scenario::Scenario;

core::RunResult simulate(const Scenario& s, runs::RunChoices& choices) { return runs::execute(s, choices).result(); }

// The simulator's finding at the first wrong step: the earliest (a mismatch of three members is
// settled when the last posts, and may come in the list after a later one).
const core::Finding* first_wrong_step(const core::RunResult& sim) {
  const core::Finding* first = nullptr;
  for (const core::Finding& f : sim.findings)
    if (first == nullptr || f.time < first->time) first = &f;
  return first;
}

// The verdicts about communication: what NCCL's calls and completions can show.
bool communication_class(const std::string& c) {
  return c == "misaligned" || c == "unmatched" || c == "cycle" || c == "stall";
}

// Whether a deadlock holds a host thread in a connection's first-contact setup: inside
// ncclGroupEnd (or an ungrouped call) before NCCL builds the tasks, so the plugin never learns
// the peers of that thread's sends and receives.
bool through_connect(const core::Finding& f) {
  return std::any_of(f.sites.begin(), f.sites.end(), [](const core::Site& s) {
    return s.actor.ends_with(".host") && s.wait == core::SiteWait::connect;
  });
}

// A mismatch the profiler cannot see as one: of labels only (NCCL has none), or of an all_to_all
// against another collective (NCCL runs an all_to_all as sends and receives, which never pair with
// a collective: both sides wait).
bool mismatch_unseen(const core::Finding& f) {
  if (f.kind != core::FindingKind::collective_mismatch && f.kind != core::FindingKind::p2p_mismatch) return false;
  const core::OpFields& m = f.mismatched;
  if (!m.any()) return false;
  const bool seen = m.kind || m.dtype || m.count || m.root;
  return !seen || m.all_to_all;
}

bool share_a_rank(const core::Finding& a, const core::Finding& b) {
  for (const core::Site& s : a.sites)
    if (s.rank >= 0 && b.involves_rank(s.rank)) return true;
  return a.culprit.rank >= 0 && b.involves_rank(a.culprit.rank);
}

// Whether the watcher tells of calls never launched on a rank the simulator's finding names.
bool never_launched_there(const core::Finding& sim, const core::RunResult& watch) {
  for (const auto* list : {&watch.findings, &watch.notes})
    for (const core::Finding& f : *list)
      if (f.kind == core::FindingKind::never_launched && share_a_rank(sim, f)) return true;
  return false;
}

// A cycle check reads through an operation whose counterpart is not posted: a trace (or a dump)
// cannot tell "not yet" from "never", and check takes it for "not yet".
bool through_not_posted(const core::Finding& f) {
  return f.kind == core::FindingKind::cycle && std::any_of(f.sites.begin(), f.sites.end(), [](const core::Site& s) {
           return s.wait == core::SiteWait::counterpart_unposted;
         });
}

std::string culprit_difference(const core::Culprit& sim, const core::Culprit& watch) {
  auto blames = [](const core::Culprit& x) {
    return x.rank >= 0 && x.what != core::Blame::stalled && x.what != core::Blame::cycle;
  };
  const bool s = blames(sim), w = blames(watch);
  if (!s && !w) return "";
  if (s != w)
    return fmt::format("only {} blames a rank ({})", s ? "the simulator" : "the watcher", s ? sim.rank : watch.rank);
  if (sim.rank == watch.rank && sim.comm == watch.comm && sim.p2p == watch.p2p && sim.position == watch.position)
    return "";
  return fmt::format("the simulator blames rank {} on '{}' {} #{} ({}), the watcher rank {} on '{}' {} #{} ({})",
                     sim.rank, sim.comm, sim.p2p ? "p2p" : "collective", sim.position, sim.what, watch.rank, watch.comm,
                     watch.p2p ? "p2p" : "collective", watch.position, watch.what);
}

// The rules of agreement (plugin_differential.h), in order.
void compare(PluginCase& c, const core::RunResult& sim, const core::RunResult& watch, const VisibleOps& visible,
             bool emulated) {
  const core::Finding* w = watch.findings.empty() ? nullptr : &watch.findings.front();
  const core::Finding* s = first_wrong_step(sim);
  c.mismatch_unseen = s != nullptr && mismatch_unseen(*s);
  c.emulated = emulated;
  c.via_host_call = c.sim_class == "cycle" && s != nullptr && through_host_call(*s);
  c.via_connect = communication_class(c.sim_class) && s != nullptr && through_connect(*s);
  c.data_lost = std::any_of(sim.notes.begin(), sim.notes.end(),
                            [](const core::Finding& n) { return n.kind == core::FindingKind::p2p_data_lost; });
  c.in_time = emulated || c.sim_class != "misaligned" || c.watch_class != "misaligned" ||
              (c.watch_reported >= 0 && c.watch_reported <= c.sim_found);
  auto fail = [&](std::string why) { c.why = std::move(why); };
  if (c.sim_class == "pass") {
    if (c.watch_class != "pass") return fail(fmt::format("the simulator passes; the watcher says {}", c.watch_class));
    if (c.recorded != c.told)
      return fail(fmt::format("the plugin recorded {} operations of the {} it was told of", c.recorded, c.told));
  } else if (emulated) {
    // The simulator emulates NCCL past a mismatch and reports what it leads to; the watcher reports
    // the mismatched operations themselves, as they are posted (or, equal in shape, what follows).
    if (c.watch_class != "misaligned" && c.watch_class != c.sim_class)
      return fail(
          fmt::format("the simulator emulates past a mismatch ({}); the watcher says {}", c.sim_class, c.watch_class));
  } else if (c.mismatch_unseen) {
    if (!communication_class(c.watch_class) || c.watch_class == "misaligned")
      return fail(fmt::format(
          "a mismatch NCCL cannot see as one (labels, or an all_to_all against a collective); the watcher says {}",
          c.watch_class));
  } else if (!communication_class(c.sim_class)) {
    // A verdict about memory or outputs, or a call NCCL refuses with an error code (a profiler is
    // told of neither): the watcher sees the run's operations, completed or left in flight where
    // the simulator stopped the run.
    c.not_visible = true;
    const bool all_done = visible.completed == visible.posted;
    // A call NCCL refuses at its group's end is one it never launches.
    const bool refused = c.sim_class == "invalid-usage" && c.watch_class == "stall";
    const bool fits = all_done ? c.watch_class == "pass" || refused
                               : communication_class(c.watch_class) && c.watch_class != "misaligned";
    if (!fits)
      return fail(fmt::format("the simulator says {} ({} of {} operations completed): the watcher should {}, says {}",
                              c.sim_class, visible.completed, visible.posted,
                              all_done ? "pass" : "see them stuck, misaligned with nothing", c.watch_class));
  } else if (c.via_connect) {
    // The stuck threads' sends and receives have no peer the plugin knows: calls never launched.
    if (!communication_class(c.watch_class) || w == nullptr ||
        (!share_a_rank(*s, *w) && !never_launched_there(*s, watch)))
      return fail(fmt::format("the simulator's deadlock holds threads in first-contact setup; the watcher says {}{}",
                              c.watch_class, communication_class(c.watch_class) ? " about other ranks" : ""));
  } else if (c.via_host_call || c.data_lost) {
    if (!communication_class(c.watch_class))
      return fail(fmt::format("the simulator says {}{}; the watcher says {}", c.sim_class,
                              c.via_host_call ? " through a host call" : "", c.watch_class));
  } else if (c.sim_class == "unmatched" && w != nullptr && through_not_posted(*w)) {
    c.not_yet_or_never = true;
  } else {
    if (c.sim_class != c.watch_class)
      return fail(fmt::format("the simulator says {}, the watcher {}", c.sim_class, c.watch_class));
    if (std::string d = culprit_difference(c.sim_culprit, c.watch_culprit); !d.empty()) return fail(std::move(d));
  }
  if (!c.in_time)
    return fail(fmt::format("the watcher reported the misalignment at {} ns, after the simulator found it ({} ns)",
                            c.watch_reported, c.sim_found));
  c.agree = true;
}

}  // namespace

PluginCase compare_on_plugin(const std::string& file, const std::string& dir, int interface) {
  const Scenario scenario = scenario::load_scenario(file).scenario;
  PluginCase c;
  c.file = file;
  std::visit([&](const auto& x) { c.name = x.name; }, scenario);
  const fs::path d(dir);
  fs::remove_all(d);
  fs::create_directories(d / "traces");
  const nccl_profiler::PluginLibrary& lib = nccl_profiler::PluginLibrary::open(nccl_profiler::built_plugin_path());
  LiveWatch live(d);
  VisibleOps visible;
  core::RunResult sim;
  {
    nccl_profiler::SimAdapter adapter(lib, interface, (d / "traces").string(), [&](core::Time t) { live.on_flush(t); });
    runs::RunChoices choices;
    choices.seed = 1;
    choices.record_decisions = false;
    choices.sink = &visible;
    choices.nccl_observer = &adapter;
    sim = simulate(scenario, choices);
    adapter.finish(sim.verdict == core::Verdict::fifo_misalignment);
    c.told = adapter.posted();
  }
  live.on_flush(sim.stats.sim_time);
  const core::Finding* s = first_wrong_step(sim);
  c.sim_class = fr_class(s, sim.verdict);
  // A monitor's disagreement (the gate, a decision) stops the run before any operation differs.
  if (s != nullptr && sim.verdict == core::Verdict::fifo_misalignment &&
      s->kind != core::FindingKind::collective_mismatch && s->kind != core::FindingKind::p2p_mismatch &&
      s->kind != core::FindingKind::unmatched)
    c.sim_class = core::to_string(s->kind);
  c.sim_summary = s != nullptr ? s->summary : "";
  c.sim_found = s != nullptr ? s->time : -1;
  if (s != nullptr) c.sim_culprit = s->culprit;
  if (!c.sim_culprit.p2p && c.sim_culprit.position >= 0)
    c.sim_culprit.position = visible.nccl_collective_index(c.sim_culprit.comm, c.sim_culprit.position);
  c.sim_posted = visible.posted;
  c.watch_reported = live.first_at;
  c.recorded = live.watcher.counts().posted + live.watcher.counts().unmodelled;
  core::RunResult w;
  try {
    w = live.watcher.result();
    live.watcher.finish(w);
    const core::Finding* f = w.findings.empty() ? nullptr : &w.findings.front();
    c.watch_class = fr_class(f, w.verdict);
    c.watch_summary = f != nullptr ? f->summary : "";
    if (f != nullptr) c.watch_culprit = f->culprit;
  } catch (const core::InputError&) {
    c.watch_class = "nothing-recorded";
  }
  if (c.watch_class == "nothing-recorded") {
    // NCCL told the plugin nothing (no communication, or only one-rank collectives): never a pass.
    c.agree = visible.posted == 0;
    if (!c.agree) c.why = fmt::format("the plugin recorded nothing of {} operations", visible.posted);
    return c;
  }
  const auto* program = std::get_if<program::Program>(&scenario);
  const bool emulated = program != nullptr && program->config.on_mismatch == core::OnMismatch::emulate;
  compare(c, sim, w, visible, emulated);
  return c;
}

PluginCase run_plugin_case(const PluginDifferentialOptions& o, uint64_t index) {
  const GeneratedCase g = generate_case(o.out, "npd", o.seed, index, [&](generator::Disturbance d) {
    return generator::nccl_profiler_options(o.max_ranks, d);
  });
  PluginCase c = compare_on_plugin(g.file, (fs::path(g.file).parent_path() / "run").string(), o.interface);
  c.index = index;
  c.ranks = g.program.program.num_ranks;
  c.kind = std::string(generator::to_string(g.kind));
  c.disturbance = g.program.disturbance;
  return c;
}

}  // namespace ppspec::fidelity
