// Flight Recorder dumps made in a test, in PyTorch's record format: groups, then each rank's
// operations in its record order. Written as JSON files into a fresh folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "tests/scratch.h"

namespace ppspec::testing {

class FrDumps {
 public:
  using Json = nlohmann::json;
  FrDumps(int ranks, std::string backend = "nccl")
      : ranks_(ranks), backend_(std::move(backend)), entries_(static_cast<size_t>(ranks)) {}

  void group(const std::string& name, const std::string& desc, const std::vector<int>& members) {
    groups_[name] = {desc, members};
  }

  // A collective of `rank` on `group` (its next collective_seq_id there).
  void collective(int rank, const std::string& group, const std::string& op, std::vector<int64_t> sizes,
                  const std::string& dtype, const std::string& state) {
    Json e = base(rank, group, fmt(op), sizes, dtype, state);
    e["collective_seq_id"] = ++coll_seq_[{rank, group}];
    e["p2p_seq_id"] = 0;
    e["is_p2p"] = false;
    entries_[static_cast<size_t>(rank)].push_back(std::move(e));
  }
  // A send (to global `peer`) or receive (from it) on `group`, named by group-local ranks as PyTorch does.
  void p2p(int rank, const std::string& group, bool send, int peer, std::vector<int64_t> sizes,
           const std::string& dtype, const std::string& state) {
    const int me = local(group, rank), them = local(group, peer);
    const std::string name = send ? fmt(std::string("send ") + std::to_string(me) + "->" + std::to_string(them))
                                  : fmt(std::string("recv ") + std::to_string(me) + "<-" + std::to_string(them));
    Json e = base(rank, group, name, sizes, dtype, state);
    e["collective_seq_id"] = coll_seq_[{rank, group}];
    e["p2p_seq_id"] = ++p2p_seq_[{rank, group}];
    e["is_p2p"] = true;
    entries_[static_cast<size_t>(rank)].push_back(std::move(e));
  }
  // `rank`'s `i`-th entry, to set a field the helpers above do not.
  Json& entry(int rank, size_t i) { return entries_.at(static_cast<size_t>(rank)).at(i); }
  // Keep only each rank's last `keep` entries, as a wrapped ring buffer does.
  void wrap(int rank, size_t keep) {
    auto& v = entries_[static_cast<size_t>(rank)];
    if (v.size() > keep) v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(keep));
  }
  Json dump(int rank) const {
    Json cfg = Json::object();
    for (const auto& [name, g] : groups_) {
      std::string ranks = "[";
      for (size_t i = 0; i < g.second.size(); ++i) ranks += (i ? ", " : "") + std::to_string(g.second[i]);
      cfg[name] = {{"name", name}, {"desc", g.first}, {"ranks", ranks + "]"}};
    }
    Json d = {{"version", "2.10"}, {"comm_lib_version", "2.28.9"}, {"pg_config", cfg}, {"pg_status", Json::object()}};
    if (!entries_[static_cast<size_t>(rank)].empty()) d["entries"] = entries_[static_cast<size_t>(rank)];
    return d;
  }
  // Writes every rank's dump (but `skip`) as PREFIX + rank + ".json" into a fresh folder.
  std::filesystem::path write(const std::string& name, const std::string& prefix = "rank_", int skip = -1) const {
    const std::filesystem::path dir = scratch_path("ppspec_frd_" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (int r = 0; r < ranks_; ++r)
      if (r != skip) std::ofstream(dir / (prefix + std::to_string(r) + ".json")) << dump(r).dump();
    return dir;
  }

 private:
  std::string fmt(const std::string& op) const { return backend_ + ":" + op; }
  int local(const std::string& group, int rank) const {
    const auto& m = groups_.at(group).second;
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i] == rank) return static_cast<int>(i);
    return -1;
  }
  Json base(int rank, const std::string& group, const std::string& name, const std::vector<int64_t>& sizes,
            const std::string& dtype, const std::string& state) {
    const int64_t id = record_[rank]++;
    return Json{{"record_id", id},
                {"pg_id", std::distance(groups_.begin(), groups_.find(group))},
                {"process_group", Json::array({group, groups_.at(group).first})},
                {"op_id", id + 1},
                {"profiling_name", name},
                {"time_created_ns", 1000 * (id + 1)},
                {"input_sizes", Json::array({sizes})},
                {"input_dtypes", Json::array({dtype})},
                {"output_sizes", Json::array({sizes})},
                {"output_dtypes", Json::array({dtype})},
                {"state", state},
                {"time_discovered_started_ns", nullptr},
                {"time_discovered_completed_ns", state == "completed" ? Json(1000 * (id + 1) + 500) : Json(nullptr)},
                {"retired", state == "completed"},
                {"timeout_ms", 600000}};
  }

  int ranks_;
  std::string backend_;
  std::map<std::string, std::pair<std::string, std::vector<int>>> groups_;
  std::vector<std::vector<Json>> entries_;
  std::map<std::pair<int, std::string>, int64_t> coll_seq_, p2p_seq_;
  std::map<int, int64_t> record_;
};

}  // namespace ppspec::testing
