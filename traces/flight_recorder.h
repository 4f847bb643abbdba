// PyTorch Flight Recorder dumps (ProcessGroupNCCL's ring buffer of collectives and p2p operations,
// one dump per rank), read without Python: the JSON format (`_dump_nccl_trace_json`) and the pickle
// format (`_dump_nccl_trace`, what `fr_trace` reads), version 2.x. A folder holds one dump per rank,
// `rank_N.json` or `rank_N` (N: the global rank). Bad input is a
// core::InputError naming the file and the record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ppspec::traces {

struct FrEntry {
  int64_t record_id = -1;
  int64_t pg_id = -1;
  int64_t collective_seq_id = -1;
  int64_t p2p_seq_id = -1;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:broadcast", "nccl:send 0->1", "nccl:recv 1<-0"
  std::string op;              // "broadcast", "send", "recv", ...
  int peer = -1;               // p2p: the other rank (global)
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;
  std::string state;           // scheduled | started | completed
  // Wall-clock nanoseconds (0: not recorded): when it was enqueued, found started, found completed.
  int64_t created_ns = 0, started_ns = 0, completed_ns = 0;
};

struct FrGroup {
  std::string name;
  std::string desc;
  std::vector<int> ranks;  // global ranks, in group order
};

struct FrDump {
  int rank = -1;
  std::string file;
  std::string version;
  std::map<int64_t, FrGroup> groups;  // by pg id
  std::vector<FrEntry> entries;       // in record order
};

// Bounds on what a dump may hold (the default ring buffer is 2000 entries).
inline constexpr size_t kFrEntriesMax = 1 << 20;
inline constexpr int kFrRanksMax = 4096;

FrDump read_fr_json(const std::string& file, int rank);
FrDump read_fr_pickle(const std::string& file, int rank);
// Every `rank_N.json` of `dir`, by rank. Throws when there is none, or a dump is malformed.
std::vector<FrDump> read_fr_dir(const std::string& dir);
// Whether `dir` looks like a folder of Flight Recorder dumps (so `ppspec check` treats it as one).
bool is_fr_dir(const std::string& dir);

}  // namespace ppspec::traces
