#include "traces/fr_writer.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>

#include "core/error.h"
#include "traces/pickle_writer.h"
#include "traces/torch_dtype.h"
#include "traces/trace_reader.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

using Posted = FrPosted;

struct Run : FrRun {
  std::map<int64_t, std::pair<int, size_t>> by_op;  // op id -> (rank, index)
};

Run read_run(const std::string& trace) {
  TraceReader reader(trace, TraceReader::Options{.require_trailer = false});
  Run run;
  while (const core::Event* e = reader.next()) {
    if (e->kind == core::EventKind::comm_init) run.members[std::string(e->comm)].insert(e->rank);
    if (e->kind == core::EventKind::op_posted && e->has_op) {
      auto& mine = run.posts[e->rank];
      run.by_op[e->op_id] = {e->rank, mine.size()};
      mine.push_back(Posted{std::string(e->comm), e->op, e->op_id, e->t, -1, -1, std::string(e->actor), std::string(e->text), e->value});
      // A peer (or a member) that never initialised still belongs to the communicator.
      run.members[std::string(e->comm)].insert(e->rank);
    }
    if (e->kind != core::EventKind::op_started && e->kind != core::EventKind::op_completed) continue;
    const auto it = run.by_op.find(e->op_id);
    if (it == run.by_op.end()) continue;
    Posted& p = run.posts[it->second.first][it->second.second];
    (e->kind == core::EventKind::op_started ? p.started : p.completed) = e->t;
  }
  for (const auto& [rank, posts] : run.posts)
    for (const Posted& p : posts)
      if (core::is_p2p(p.desc.kind) && p.desc.peer >= 0) run.members[p.comm].insert(p.desc.peer);
  return run;
}

Json sizes_of(const core::OpDesc& d, int64_t times) {
  if (d.cols > 1 && d.count % d.cols == 0) return Json::array({Json::array({times * (d.count / d.cols), d.cols})});
  return Json::array({Json::array({times * d.count})});
}

int local_of(const std::vector<int>& ranks, int global) {
  const auto it = std::find(ranks.begin(), ranks.end(), global);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

// "file.toml:31" as the frame PyTorch would record at the call.
Json frames_of(const Posted& p) {
  Json frames = Json::array();
  const auto colon = p.origin.rfind(':');
  int64_t line = 0;
  if (colon != std::string::npos && colon + 1 < p.origin.size()) {
    for (char c : p.origin.substr(colon + 1)) line = std::isdigit(static_cast<unsigned char>(c)) ? line * 10 + (c - '0') : -1;
    if (line < 0) line = 0;
  }
  frames.push_back({{"name", p.actor}, {"filename", colon == std::string::npos ? p.origin : p.origin.substr(0, colon)}, {"line", line}});
  return frames;
}

struct Group {
  std::string name;
  std::string desc;
  std::vector<int> ranks;
  int64_t id = 0;
};

Json entry_of(const Posted& p, const Group& g, int rank, int64_t record, int64_t coll_seq, int64_t p2p_seq) {
  const bool p2p = core::is_p2p(p.desc.kind);
  std::string name = fmt::format("nccl:{}", core::to_string(p.desc.kind));
  if (p2p)
    name += p.desc.kind == core::OpKind::send ? fmt::format(" {}->{}", local_of(g.ranks, rank), local_of(g.ranks, p.desc.peer))
                                              : fmt::format(" {}<-{}", local_of(g.ranks, rank), local_of(g.ranks, p.desc.peer));
  const int64_t gathered = p.desc.kind == core::OpKind::all_gather ? static_cast<int64_t>(g.ranks.size()) : 1;
  const std::string dtype = torch_dtype(p.desc.dtype);
  const char* state = p.completed >= 0 ? "completed" : p.started >= 0 ? "started" : "scheduled";
  // Times from the run's start: PyTorch's are wall-clock nanoseconds, never 0 when recorded.
  auto time = [](int64_t t) { return t >= 0 ? Json(t + 1) : Json(nullptr); };
  return Json{{"record_id", record},
              {"pg_id", g.id},
              {"process_group", Json::array({g.name, g.desc})},
              {"collective_seq_id", coll_seq},
              {"p2p_seq_id", p2p_seq},
              {"op_id", record + 1},
              {"profiling_name", name},
              {"time_created_ns", p.posted + 1},
              {"input_sizes", sizes_of(p.desc, 1)},
              {"input_dtypes", Json::array({dtype})},
              {"output_sizes", sizes_of(p.desc, gathered)},
              {"output_dtypes", Json::array({dtype})},
              {"state", state},
              {"time_discovered_started_ns", time(p.started)},
              {"time_discovered_completed_ns", time(p.completed)},
              {"retired", p.completed >= 0},
              {"timeout_ms", 600000},
              {"is_p2p", p2p},
              {"thread_name", p.actor},
              {"thread_id", std::to_string(rank)},
              {"frames", frames_of(p)}};
}

// The record closing a coalesced p2p group, as ProcessGroupNCCL::endCoalescing writes it: the
// group's state (its members', which PyTorch records without events, stay `scheduled`).
Json coalesced_of(const std::vector<const Posted*>& members, const Json& last, int64_t record) {
  bool all_done = true, any_started = false;
  int64_t started = -1, completed = -1;
  for (const Posted* p : members) {
    all_done = all_done && p->completed >= 0;
    any_started = any_started || p->started >= 0 || p->completed >= 0;
    if (p->started >= 0) started = started < 0 ? p->started : std::min(started, p->started);
    completed = std::max(completed, p->completed);
  }
  Json m = last;
  m["record_id"] = record;
  m["op_id"] = record + 1;
  m["profiling_name"] = "nccl:coalesced";
  for (const char* key : {"input_sizes", "input_dtypes", "output_sizes", "output_dtypes"}) m[key] = Json::array();
  m["state"] = all_done ? "completed" : any_started ? "started" : "scheduled";
  m["time_discovered_started_ns"] = any_started ? Json((started >= 0 ? started : completed) + 1) : Json(nullptr);
  m["time_discovered_completed_ns"] = all_done ? Json(completed + 1) : Json(nullptr);
  m["retired"] = all_done;
  return m;
}

// A rank's records: one per operation in posting order, a group's p2p operations sharing one
// p2p_seq_id and closed by a `coalesced` record; numbered on from `numbering`.
Json entries_of(const std::deque<Posted>& posts, const std::map<std::string, Group>& groups, int rank, FrNumbering numbering) {
  Json entries = Json::array();
  std::vector<const Posted*> open;  // the p2p operations of the coalesced group being written
  auto close = [&](std::optional<int64_t> record) {
    // A group whose members all left the window before it closed leaves no record to write.
    if (record && !open.empty()) entries.push_back(coalesced_of(open, entries.back(), *record));
    open.clear();
  };
  for (const Posted& p : posts) {
    const FrNumbering::Ids id = numbering.next(p);
    close(id.coalesced);
    Json e = entry_of(p, groups.at(p.comm), rank, id.record, id.coll, id.p2p);
    if (core::is_p2p(p.desc.kind) && p.group >= 0) {
      e["state"] = "scheduled";
      e["time_discovered_started_ns"] = nullptr;
      e["time_discovered_completed_ns"] = nullptr;
      e["retired"] = false;
      open.push_back(&p);
    }
    entries.push_back(std::move(e));
  }
  close(numbering.close());
  return entries;
}

}  // namespace

FrNumbering::Ids FrNumbering::next(const FrPosted& p) {
  Ids id;
  const bool is_p2p = core::is_p2p(p.desc.kind);
  const bool grouped = is_p2p && p.group >= 0;
  const bool joins = open_ && grouped && open_group_ == p.group && open_comm_ == p.comm;
  if (open_ && !joins) id.coalesced = close();
  id.coll = is_p2p ? coll_[p.comm] : ++coll_[p.comm];
  id.p2p = !is_p2p ? 0 : joins ? p2p_[p.comm] : ++p2p_[p.comm];
  id.record = records_++;
  if (grouped && !joins) {
    open_ = true;
    open_group_ = p.group;
    open_comm_ = p.comm;
  }
  return id;
}

std::optional<int64_t> FrNumbering::close() {
  if (!open_) return std::nullopt;
  open_ = false;
  return records_++;
}

FrExport flight_recorder_of(const std::string& trace) { return flight_recorder_of(read_run(trace)); }

FrExport flight_recorder_of(const FrRun& run) {
  FrExport out;
  std::map<std::string, Group> groups;
  int64_t id = 0;
  for (const auto& [comm, members] : run.members) {
    Group g{std::to_string(id), comm, std::vector<int>(members.begin(), members.end()), id};
    out.group_of[comm] = g.name;
    groups.emplace(comm, std::move(g));
    ++id;
  }
  std::set<int> ranks;
  for (const auto& [comm, members] : run.members) ranks.insert(members.begin(), members.end());
  for (int rank : ranks) {
    Json cfg = Json::object(), status = Json::object();
    for (const auto& [comm, g] : groups)
      if (local_of(g.ranks, rank) >= 0) {
        cfg[g.name] = {{"name", g.name}, {"desc", g.desc}, {"ranks", fmt::format("[{}]", fmt::join(g.ranks, ", "))}};
        status[std::to_string(g.id)] = {{"last_enqueued_collective", -1}, {"last_started_collective", -1}, {"last_completed_collective", -1}};
      }
    const auto it = run.posts.find(rank);
    const auto before = run.before.find(rank);
    const Json entries = it == run.posts.end() ? Json::array()
                                               : entries_of(it->second, groups, rank, before == run.before.end() ? FrNumbering{} : before->second);
    out.dumps[rank] = Json{{"version", "2.10"}, {"comm_lib_version", "ppspec"}, {"pg_config", cfg}, {"pg_status", status}, {"entries", entries}};
  }
  return out;
}

void write_flight_recorder(const FrExport& e, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "json", ec);
  fs::create_directories(fs::path(dir) / "pickle", ec);
  if (ec) throw core::InputError(dir, 0, "cannot make the output folders json/ and pickle/");
  for (const auto& [rank, dump] : e.dumps) {
    // The JSON dump as `_dump_nccl_trace_json` writes it: no frames, 0 for a time not recorded, no
    // 'entries' when there is none.
    Json j = dump;
    for (Json& entry : j["entries"]) {
      entry.erase("frames");
      for (const char* key : {"time_discovered_started_ns", "time_discovered_completed_ns"})
        if (entry[key].is_null()) entry[key] = 0;
    }
    if (j["entries"].empty()) j.erase("entries");
    const fs::path json = fs::path(dir) / "json" / fmt::format("nccl_trace_rank_{}.json", rank);
    const fs::path pkl = fs::path(dir) / "pickle" / fmt::format("nccl_trace_rank_{}", rank);
    std::ofstream(json, std::ios::binary) << j.dump();
    std::ofstream(pkl, std::ios::binary) << pickle(dump);
    if (!fs::is_regular_file(json, ec) || !fs::is_regular_file(pkl, ec)) throw core::InputError(dir, 0, "cannot write the dumps");
  }
}

}  // namespace ppspec::traces
