#include "traces/fr_writer.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "core/assert.h"
#include "core/error.h"
#include "traces/pickle_writer.h"
#include "traces/torch_dtype.h"
#include "traces/trace_reader.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// Times in a dump are wall-clock nanoseconds: a trace's start is placed at this one (2026-12).
constexpr int64_t kEpochNs = 1796000000000000000;
constexpr int64_t kNever = INT64_MAX;

struct Group {
  std::string name;
  std::string desc;
  std::vector<int> ranks;
  int64_t id = 0;
};

int local_of(const std::vector<int>& ranks, int global) {
  const auto it = std::find(ranks.begin(), ranks.end(), global);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

// "file.toml:31" as the frame PyTorch would record at the call.
Json frames_of(const FrPosted& p) {
  Json frames = Json::array();
  const auto colon = p.origin.rfind(':');
  int64_t line = 0;
  if (colon != std::string::npos && colon + 1 < p.origin.size()) {
    for (char c : p.origin.substr(colon + 1))
      line = std::isdigit(static_cast<unsigned char>(c)) ? line * 10 + (c - '0') : -1;
    if (line < 0) line = 0;
  }
  frames.push_back({{"name", p.actor},
                    {"filename", colon == std::string::npos ? p.origin : p.origin.substr(0, colon)},
                    {"line", line}});
  return frames;
}

// What a dump written at `at` can know of the operations a record stands for.
struct Seen {
  int64_t created = 0;
  bool began = false, done = false, retired = false;
  int64_t started = 0, completed = 0;  // when the watchdog (or the dump) found it; 0: not found
};

// Completions are found at the watchdog's next poll, and it retires what it finds; the dump itself
// updates what is not retired yet (at `at`).
Seen seen(const std::vector<FrPosted>& posts, int64_t at, const FrWriteOptions& o) {
  Seen s;
  s.created = posts.front().posted;
  bool done = true;
  int64_t started = kNever, completed = 0;
  for (const FrPosted& p : posts) {
    done = done && p.completed >= 0 && p.completed <= at;
    completed = std::max(completed, p.completed);
    const int64_t began = p.started >= 0 ? p.started : p.completed;
    if (began >= 0 && began <= at) started = std::min(started, began);
  }
  const auto found = [&](int64_t t) { return o.poll > 0 ? (t + o.poll - 1) / o.poll * o.poll : t; };
  s.done = done;
  s.began = started != kNever && o.timing;
  if (s.began) s.started = std::min(found(started), at);
  if (done) {
    s.retired = found(completed) <= at;
    s.completed = s.retired ? found(completed) : at;
  }
  return s;
}

Json times(int64_t t) { return Json(kEpochNs + t); }

Json dtypes_of(const FrRecordPlan& r, bool out) {
  Json d = Json::array();
  if (r.role == FrRecordPlan::Role::closer) return d;
  const size_t n = out ? r.outputs.size() : r.inputs.size();
  for (size_t i = 0; i < n; ++i) d.push_back(torch_dtype(r.posts[std::min(i, r.posts.size() - 1)].desc.dtype));
  return d;
}

std::string profiling_name(const FrRecordPlan& r, const Group& g, int rank, FrBackend backend) {
  std::string name = fmt::format("{}:{}", backend == FrBackend::gloo ? "gloo" : "nccl", r.name);
  if (r.is_p2p) {
    const core::OpDesc& d = r.posts.front().desc;
    const int me = local_of(g.ranks, rank), them = local_of(g.ranks, d.peer);
    name += d.kind == core::OpKind::send ? fmt::format(" {}->{}", me, them) : fmt::format(" {}<-{}", me, them);
  }
  return name;
}

Json entry_of(const FrRecordPlan& r, const Group& g, int rank, int64_t at, const FrWriteOptions& o) {
  const bool gloo = o.backend == FrBackend::gloo;
  const bool member = r.role == FrRecordPlan::Role::member;
  Seen s = seen(r.posts, at, o);
  if (member || gloo) s = Seen{s.created, false, false, gloo, 0, 0};  // members have no events; Gloo records no state
  Json e{{"record_id", r.record},
         {"pg_id", g.id},
         {"process_group", Json::array({g.name, g.desc})},
         {"collective_seq_id", r.coll},
         {"p2p_seq_id", r.p2p},
         {"op_id", r.op},
         {"profiling_name", profiling_name(r, g, rank, o.backend)},
         {"time_created_ns", kEpochNs + s.created},
         {"input_sizes", r.role == FrRecordPlan::Role::closer ? Json::array() : Json(r.inputs)},
         {"input_dtypes", dtypes_of(r, false)},
         {"output_sizes", r.role == FrRecordPlan::Role::closer ? Json::array() : Json(r.outputs)},
         {"output_dtypes", dtypes_of(r, true)},
         {"state", s.done    ? "completed"
                   : s.began ? "started"
                             : "scheduled"},
         {"time_discovered_started_ns", s.began ? times(s.started) : Json(nullptr)},
         {"time_discovered_completed_ns", s.done ? times(s.completed) : Json(nullptr)},
         {"retired", s.retired},
         {"timeout_ms", gloo ? 1800000 : 600000},
         {"is_p2p", r.is_p2p},
         {"thread_name", r.posts.front().actor},
         {"thread_id", std::to_string(rank)},
         {"frames", frames_of(r.posts.front())}};
  if (o.timing && s.done && !gloo)
    e["duration_ms"] = static_cast<double>(std::max<int64_t>(0, s.completed - s.started)) / 1e6;
  return e;
}

// When rank `rank`'s dump is written: after the run, or at its moment of a dump taken while it runs.
int64_t dumped_at(const FrWriteOptions& o, int rank) { return o.at ? *o.at + rank * o.skew : kNever; }

FrPlaceKey key_of(int rank, const FrPosted& p) {
  const bool p2p = core::is_p2p(p.desc.kind);
  return {rank, p.comm, p2p, p2p ? p.desc.peer : -1, p.cseq};
}

// A rank's records, planned from its operations posted by the time of its dump, numbered on from
// `numbering`, and what the ring still holds of them; where each operation landed goes to `placed`.
Json entries_of(const std::deque<FrPosted>& posts, const std::map<std::string, Group>& groups, int rank,
                FrNumbering numbering, const FrWriteOptions& o, std::map<FrPlaceKey, FrPlaced>& placed) {
  const int64_t at = dumped_at(o, rank);
  std::vector<FrRecordPlan> plans;
  for (const FrPosted& p : posts) {
    placed[key_of(rank, p)] = FrPlaced{p.cseq, false, false};  // until a record holds it
    if (p.posted > at) continue;
    for (FrRecordPlan& r : numbering.next(p)) plans.push_back(std::move(r));
  }
  for (FrRecordPlan& r : numbering.close()) plans.push_back(std::move(r));
  Json entries = Json::array();
  const size_t keep = o.buffer == 0 ? plans.size() : std::min(plans.size(), o.buffer);
  for (size_t i = 0; i < plans.size(); ++i) {
    const FrRecordPlan& r = plans[i];
    const bool collective = !r.is_p2p && r.role != FrRecordPlan::Role::closer;
    for (const FrPosted& p : r.posts)
      if (r.role != FrRecordPlan::Role::closer || r.name != "coalesced")
        placed[key_of(rank, p)] = FrPlaced{collective ? r.coll - 1 : p.cseq, i >= plans.size() - keep,
                                           collective && core::is_p2p(p.desc.kind)};
    if (i >= plans.size() - keep) entries.push_back(entry_of(r, groups.at(r.comm), rank, at, o));
  }
  PPSPEC_ASSERT(entries.size() == keep);
  return entries;
}

// pg_status as PyTorch keeps it: per group id, the last call enqueued, started and completed.
Json status_of(const Json& entries, const std::map<std::string, Group>& groups, const FrWriteOptions& o) {
  Json status = Json::object();
  for (const auto& [comm, g] : groups) {
    int64_t enqueued = -1, started = -1, completed = -1;
    for (const Json& e : entries) {
      if (e["process_group"][0] != g.name) continue;
      const int64_t seq =
          e["is_p2p"].get<bool>() ? e["p2p_seq_id"].get<int64_t>() : e["collective_seq_id"].get<int64_t>();
      enqueued = std::max(enqueued, seq);
      if (e["state"] != "scheduled" && o.timing) started = std::max(started, seq);
      if (e["state"] == "completed") completed = std::max(completed, seq);
    }
    status[std::to_string(g.id)] = {{"last_enqueued_collective", enqueued},
                                    {"last_started_collective", started},
                                    {"last_completed_collective", completed}};
  }
  return status;
}

Json config_of(const std::map<std::string, Group>& groups, int rank, const FrWriteOptions& o) {
  // ProcessGroupGloo records its group before Python names it: one nameless slot.
  if (o.backend == FrBackend::gloo) return Json{{"", {{"name", ""}, {"desc", ""}, {"ranks", "[]"}}}};
  Json cfg = Json::object();
  for (const auto& [comm, g] : groups)
    if (local_of(g.ranks, rank) >= 0)
      cfg[g.name] = {{"name", g.name}, {"desc", g.desc}, {"ranks", fmt::format("[{}]", fmt::join(g.ranks, ", "))}};
  return cfg;
}

}  // namespace

FrRun read_fr_run(const std::string& trace) {
  TraceReader reader(trace, TraceReader::Options{.require_trailer = false});
  FrRun run;
  std::map<int64_t, std::pair<int, size_t>> by_op;  // op id -> (rank, index)
  while (const core::Event* e = reader.next()) {
    if (e->kind == core::EventKind::comm_init) run.members[std::string(e->comm)].insert(e->rank);
    if (e->kind == core::EventKind::op_posted && e->has_op) {
      auto& mine = run.posts[e->rank];
      by_op[e->op_id] = {e->rank, mine.size()};
      mine.push_back(FrPosted{std::string(e->comm), e->op, e->op_id, e->t, -1, -1, std::string(e->actor),
                              std::string(e->text), e->value, e->cseq});
      // A peer (or a member) that never initialised still belongs to the communicator.
      run.members[std::string(e->comm)].insert(e->rank);
    }
    if (e->kind != core::EventKind::op_started && e->kind != core::EventKind::op_completed) continue;
    const auto it = by_op.find(e->op_id);
    if (it == by_op.end()) continue;
    FrPosted& p = run.posts[it->second.first][it->second.second];
    (e->kind == core::EventKind::op_started ? p.started : p.completed) = e->t;
  }
  for (const auto& [rank, posts] : run.posts)
    for (const FrPosted& p : posts)
      if (core::is_p2p(p.desc.kind) && p.desc.peer >= 0) run.members[p.comm].insert(p.desc.peer);
  return run;
}

FrExport flight_recorder_of(const std::string& trace, const FrWriteOptions& o) {
  return flight_recorder_of(read_fr_run(trace), o);
}

FrExport flight_recorder_of(const FrRun& run, const FrWriteOptions& o) {
  FrExport out;
  std::map<std::string, Group> groups;
  std::map<std::string, std::vector<int>> members;
  int64_t id = 0;
  for (const auto& [comm, ranks] : run.members) {
    Group g{std::to_string(id), comm, std::vector<int>(ranks.begin(), ranks.end()), id};
    out.group_of[comm] = g.name;
    members[comm] = g.ranks;
    groups.emplace(comm, std::move(g));
    ++id;
  }
  std::set<int> ranks;
  for (const auto& [comm, m] : run.members) ranks.insert(m.begin(), m.end());
  for (int rank : ranks) {
    const auto it = run.posts.find(rank);
    const auto before = run.before.find(rank);
    FrNumbering numbering = before == run.before.end() ? FrNumbering(o, members) : before->second;
    numbering.configure(o, members);
    const Json entries =
        it == run.posts.end() ? Json::array() : entries_of(it->second, groups, rank, numbering, o, out.placed);
    out.dumps[rank] = Json{{"version", "2.10"},
                           {"comm_lib_version", o.backend == FrBackend::gloo ? "" : "2.28.9"},
                           {"pg_config", config_of(groups, rank, o)},
                           {"pg_status", status_of(entries, groups, o)},
                           {"entries", entries}};
  }
  return out;
}

void write_flight_recorder(const FrExport& e, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "json", ec);
  fs::create_directories(fs::path(dir) / "pickle", ec);
  if (ec) throw core::InputError(dir, 0, "cannot make the output folders json/ and pickle/");
  for (const auto& [rank, dump] : e.dumps) {
    // The JSON dump as `_dump_nccl_trace_json` writes it: no frames, 0 for a time not recorded,
    // pg_status as strings, no 'entries' when there is none.
    Json j = dump;
    for (Json& entry : j["entries"]) {
      entry.erase("frames");
      for (const char* key : {"time_discovered_started_ns", "time_discovered_completed_ns"})
        if (entry[key].is_null()) entry[key] = 0;
    }
    for (auto& [pg, fields] : j["pg_status"].items())
      for (auto& [k, v] : fields.items()) v = std::to_string(v.get<int64_t>());
    if (j["entries"].empty()) j.erase("entries");
    const fs::path json = fs::path(dir) / "json" / fmt::format("nccl_trace_rank_{}.json", rank);
    const fs::path pkl = fs::path(dir) / "pickle" / fmt::format("nccl_trace_rank_{}", rank);
    std::ofstream(json, std::ios::binary) << j.dump();
    std::ofstream(pkl, std::ios::binary) << pickle(dump);
    if (!fs::is_regular_file(json, ec) || !fs::is_regular_file(pkl, ec))
      throw core::InputError(dir, 0, "cannot write the dumps");
  }
}

}  // namespace ppspec::traces
