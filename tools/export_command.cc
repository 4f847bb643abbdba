#include "tools/export_command.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "core/error.h"
#include "core/op.h"
#include "tools/bad_input.h"
#include "tools/job_trace_input.h"
#include "tools/check_command.h"
#include "tools/trace_scenario.h"
#include "traces/flight_recorder.h"
#include "traces/fr_writer.h"
#include "traces/trace_reader.h"

namespace ppspec::tools {
namespace {

using Json = nlohmann::json;

// Processes and threads of the timeline: pid = rank + 1 (0: actors of no rank, e.g. the engine core).
class Timeline {
 public:
  int pid(core::RankId rank) {
    const int p = rank + 1;
    if (named_pids_.insert(p).second)
      meta_.push_back(Json{{"ph", "M"},
                           {"name", "process_name"},
                           {"pid", p},
                           {"args", {{"name", rank >= 0 ? fmt::format("rank{}", rank) : "engine"}}}});
    return p;
  }
  int tid(core::RankId rank, const std::string& actor) {
    const int p = pid(rank);
    const auto [it, fresh] = tids_.try_emplace({p, actor}, static_cast<int>(tids_.size()) + 1);
    if (fresh)
      meta_.push_back(
          Json{{"ph", "M"}, {"name", "thread_name"}, {"pid", p}, {"tid", it->second}, {"args", {{"name", actor}}}});
    return it->second;
  }
  void slice(core::RankId rank, const std::string& actor, const std::string& name, const char* cat, double ts_us,
             double dur_us, Json args) {
    events_.push_back(Json{{"ph", "X"},
                           {"name", name},
                           {"cat", cat},
                           {"pid", pid(rank)},
                           {"tid", tid(rank, actor)},
                           {"ts", ts_us},
                           {"dur", std::max(dur_us, 0.001)},
                           {"args", std::move(args)}});
  }
  // An arrow from one slice to another: Perfetto binds each end to the slice enclosing it, DevTools'
  // trace engine to the slice of the same category, process, thread and timestamp.
  void flow(int64_t id, core::RankId from_rank, const std::string& from, double from_us, core::RankId to_rank,
            const std::string& to, double to_us, const std::string& name) {
    events_.push_back(Json{{"ph", "s"},
                           {"id", id},
                           {"name", name},
                           {"cat", "communication"},
                           {"pid", pid(from_rank)},
                           {"tid", tid(from_rank, from)},
                           {"ts", from_us}});
    events_.push_back(Json{{"ph", "f"},
                           {"bp", "e"},
                           {"id", id},
                           {"name", name},
                           {"cat", "communication"},
                           {"pid", pid(to_rank)},
                           {"tid", tid(to_rank, to)},
                           {"ts", to_us}});
  }
  void finding(const core::Finding& f, double ts_us) {
    const core::RankId rank = f.sites.empty() ? -1 : f.sites.front().rank;
    const std::string actor = f.sites.empty() || f.sites.front().actor.empty() ? "findings" : f.sites.front().actor;
    events_.push_back(Json{{"ph", "i"},
                           {"s", "p"},
                           {"name", fmt::format("{} ({})", core::to_string(f.verdict), f.kind)},
                           {"cat", "finding"},
                           {"pid", pid(rank)},
                           {"tid", tid(rank, actor)},
                           {"ts", ts_us},
                           {"args", {{"summary", f.summary}, {"details", f.details}}}});
  }
  Json json() && {
    Json all = std::move(meta_);
    for (Json& e : events_) all.push_back(std::move(e));
    return Json{{"traceEvents", std::move(all)}, {"displayTimeUnit", "ns"}};
  }

 private:
  std::set<int> named_pids_;
  std::map<std::pair<int, std::string>, int> tids_;
  Json meta_ = Json::array();
  std::vector<Json> events_;
};

double us(core::Time t) { return static_cast<double>(t) / 1000.0; }

struct Op {
  core::RankId rank = -1;
  std::string actor, comm, what;
  int64_t cseq = -1;
  bool p2p = false, send = false;
  core::Time posted = -1, started = -1, completed = -1;
  std::string stream;  // where it ran
  int64_t partner = -1;

  // Its track: the stream it ran on, else (never started) the host thread that posted it.
  const std::string& track() const { return stream.empty() ? actor : stream; }
  core::Time start() const { return started >= 0 ? started : posted; }
};

// A trace's events as timeline slices. Host calls and kernels are drawn as their events come;
// communication operations once the trace has ended (an operation's slice and arrows need its
// whole life, and the ones that never completed end with the trace).
class TraceSlices {
 public:
  explicit TraceSlices(Timeline& tl) : tl_(tl) {}

  void add(const core::Event& e) {
    end_ = std::max(end_, e.t);
    const std::string actor(e.actor);
    switch (e.kind) {
      case core::EventKind::op_posted: posted(e, actor); break;
      case core::EventKind::op_paired: ops_[e.op_id].partner = e.value; break;
      case core::EventKind::op_started:
        ops_[e.op_id].started = e.t;
        ops_[e.op_id].stream = actor;
        break;
      case core::EventKind::op_completed:
        ops_[e.op_id].completed = e.t;
        ops_[e.op_id].stream = actor;
        break;
      case core::EventKind::kernel_launched: launches_[{e.rank, std::string(e.kernel)}].push_back(e.t); break;
      // A host thread blocked in a synchronising call: a slice on the host thread's track.
      case core::EventKind::sync_begin: blocked_[{e.rank, actor}] = {e.t, std::string(e.text)}; break;
      // A hang dump: a host thread inside a call for `value` ns when the watchdog fired.
      case core::EventKind::actor_blocked:
        tl_.slice(e.rank, actor, fmt::format("inside {} (hang dump)", e.text), "host",
                  us(e.t - std::max<int64_t>(e.value, 0)), us(std::max<int64_t>(e.value, 0)), Json::object());
        break;
      case core::EventKind::sync_end: sync_ended(e, actor); break;
      case core::EventKind::kernel_completed: kernel_completed(e, actor); break;
      default: break;
    }
  }

  // The communication operations, then their arrows: each send to its receive, and each
  // collective's first operation to the others of its slot.
  void finish() {
    std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> slots;  // collectives by (comm, cseq)
    for (const auto& [id, o] : ops_) {
      const core::Time to = o.completed >= 0 ? o.completed : end_;
      tl_.slice(o.rank, o.track(), o.completed >= 0 ? o.what : o.what + " (not completed)", "communication",
                us(o.start()), us(to - o.start()),
                Json{{"comm", o.comm}, {"cseq", o.cseq}, {"op_id", id}, {"posted_us", us(o.posted)}});
      if (!o.p2p && o.cseq >= 0) slots[{o.comm, o.cseq}].push_back(id);
    }
    int64_t flow = 0;
    for (const auto& [id, o] : ops_) {
      if (!o.p2p || !o.send || !ops_.count(o.partner)) continue;
      arrow(++flow, o, ops_.at(o.partner), "p2p pairing");
    }
    for (const auto& [slot, ids] : slots)
      for (size_t i = 1; i < ids.size(); ++i)
        arrow(++flow, ops_.at(ids[0]), ops_.at(ids[i]), fmt::format("{} #{}", slot.first, slot.second));
  }

 private:
  void posted(const core::Event& e, const std::string& actor) {
    Op& o = ops_[e.op_id];
    o.rank = e.rank;
    o.actor = actor;
    o.comm = std::string(e.comm);
    o.what = core::describe(e.op);
    o.cseq = e.cseq;
    o.p2p = core::is_p2p(e.op.kind);
    o.send = e.op.kind == core::OpKind::send;
    o.posted = e.t;
  }

  void sync_ended(const core::Event& e, const std::string& actor) {
    const auto it = blocked_.find({e.rank, actor});
    if (it == blocked_.end()) return;
    tl_.slice(e.rank, actor, it->second.second.empty() ? "synchronise" : it->second.second, "host",
              us(it->second.first), us(e.t - it->second.first), Json::object());
    blocked_.erase(it);
  }

  void kernel_completed(const core::Event& e, const std::string& actor) {
    auto& queue = launches_[{e.rank, std::string(e.kernel)}];
    const core::Time launched = queue.empty() ? e.t : queue.front();
    if (!queue.empty()) queue.pop_front();
    // A stream runs its items in order: this one started when both it was launched and the
    // item before it ended.
    core::Time& free = stream_free_[{e.rank, actor}];
    const core::Time start = std::max(launched, free);
    tl_.slice(e.rank, actor, e.spec.empty() ? std::string(e.kernel) : fmt::format("{}[{}]", e.kernel, e.spec), "kernel",
              us(start), us(e.t - start), Json::object());
    free = e.t;
  }

  void arrow(int64_t id, const Op& from, const Op& to, const std::string& name) {
    tl_.flow(id, from.rank, from.track(), us(from.start()), to.rank, to.track(), us(to.start()), name);
  }

  Timeline& tl_;
  std::map<int64_t, Op> ops_;
  std::map<std::pair<core::RankId, std::string>, core::Time> stream_free_;           // when a stream's last item ended
  std::map<std::pair<core::RankId, std::string>, std::deque<core::Time>> launches_;  // by (rank, kernel)
  std::map<std::pair<core::RankId, std::string>, std::pair<core::Time, std::string>> blocked_;  // host: since, call
  core::Time end_ = 0;
};

void export_trace(const std::string& path, Timeline& tl) {
  traces::TraceReader reader(path, traces::TraceReader::Options{.require_trailer = false});
  limit_to_embedded_ranks(reader);
  TraceSlices slices(tl);
  while (const core::Event* e = reader.next()) slices.add(*e);
  slices.finish();
}

void export_flight_recorder(const std::string& dir, Timeline& tl) {
  const auto dumps = traces::read_fr_dir(dir).dumps;
  int64_t t0 = INT64_MAX, t1 = 0;
  for (const auto& d : dumps)
    for (const auto& e : d.entries)
      if (e.created_ns > 0) t0 = std::min(t0, e.created_ns), t1 = std::max({t1, e.created_ns, e.completed_ns});
  if (t0 == INT64_MAX) t0 = 0;
  int64_t flow = 0;
  std::map<std::pair<std::string, int64_t>, std::pair<int, double>> first_of_slot;  // (pg, seq) -> rank, ts
  for (const auto& d : dumps)
    for (const auto& e : d.entries) {
      const std::string track = fmt::format("pg {}{}", e.group, e.is_p2p ? " p2p" : "");
      const double start = us(e.created_ns - t0);
      const double end = us((e.completed_ns > 0 ? e.completed_ns : t1) - t0);
      tl.slice(d.rank, track,
               fmt::format("{} #{} ({})", e.profiling_name, e.is_p2p ? e.p2p_seq_id : e.collective_seq_id,
                           traces::to_string(e.state)),
               "communication", start, end - start, Json{{"record_id", e.record_id}, {"input_sizes", e.input_sizes}});
      if (e.is_p2p) continue;
      const auto [it, fresh] = first_of_slot.try_emplace({e.group, e.collective_seq_id}, d.rank, start);
      if (!fresh)
        tl.flow(++flow, it->second.first, track, it->second.second, d.rank, track, start,
                fmt::format("pg {} #{}", e.group, e.collective_seq_id));
    }
}

void check_fr_options(const traces::FrWriteOptions& o) {
  if (o.skew < 0 || o.poll < 0 || (o.at && *o.at < 0))
    throw core::InputError("--fr-at/--fr-skew/--fr-poll", 0, "a time of the trace: at least 0 us");
  if (o.skew > 0 && !o.at) throw core::InputError("--fr-skew", 0, "needs --fr-at (when the dumps are taken)");
}

// Whether a rank posted communication from more than one stream.
bool own_streams(const traces::FrRun& run) {
  for (const auto& [rank, posts] : run.posts) {
    std::set<std::string> actors;
    for (const traces::FrPosted& p : posts) actors.insert(p.actor);
    if (actors.size() > 1) return true;
  }
  return false;
}

}  // namespace

int export_command(const ExportArgs& args, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec", [&] {
    const TraceInput input(args.input);  // a job's plugin traces: merged
    if (args.flight_recorder) {
      if (!input.merged() && std::filesystem::is_directory(args.input))
        throw core::InputError(args.input, 0,
                               "--flight-recorder exports a ppspec trace (JSON Lines) or a job's NCCL profiler traces, "
                               "not a folder of dumps");
      check_fr_options(args.fr);
      const traces::FrRun run = traces::read_fr_run(input.path());
      const traces::FrExport e = traces::flight_recorder_of(run, args.fr);
      if (e.dumps.empty()) throw core::InputError(args.input, 0, "the trace holds no communicator: no dump to write");
      traces::write_flight_recorder(e, args.out);
      // Operations a rank ran on streams of their own are async calls to PyTorch (check's model).
      out << fmt::format(
          "wrote {} Flight Recorder dumps to {}/json and {}/pickle: check them with `ppspec check {}{}`\n",
          e.dumps.size(), args.out, args.out, args.out, own_streams(run) ? " --calls async" : "");
      return 0;
    }
    Timeline tl;
    const bool fr = !input.merged() && std::filesystem::is_directory(args.input);
    if (fr)
      export_flight_recorder(args.input, tl);
    else
      export_trace(input.path(), tl);
    // Findings as instants: where the first wrong event was (imported dumps: at the start).
    const core::RunResult r = check_path(args.input, args.scenario, err);
    for (const core::Finding& f : r.findings) tl.finding(f, f.time == core::kNoTime ? 0.0 : us(f.time));
    std::ofstream o(args.out, std::ios::binary);
    if (!o) throw core::InputError(args.out, 0, "cannot write the output file");
    const Json j = std::move(tl).json();
    o << j.dump() << '\n';
    out << fmt::format(
        "wrote {} ({} trace events, and as instants the {} finding(s) `ppspec check` gives): open it in "
        "https://ui.perfetto.dev or chrome://tracing\n",
        args.out, j.at("traceEvents").size(), r.findings.size());
    return 0;
  });
}

}  // namespace ppspec::tools
