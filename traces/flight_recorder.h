// PyTorch Flight Recorder dumps (the ring buffer of collectives and p2p operations that
// ProcessGroupNCCL, ProcessGroupGloo and the generic recorder keep, one dump per rank), read without
// Python: the JSON format (`_dump_nccl_trace_json`, `_dump_fr_trace_json`) and the pickle format
// (`_dump_nccl_trace`, what PyTorch's `fr_trace` reads), version 2.x.
//
// What the reader guarantees, so that the checker never judges what it misread:
// * every number is an integer of the expected range (1.5, 1e300, 2^64 - 1, -3 are refused);
// * every entry names a process group of its dump's `pg_config` (by name, as PyTorch keys it), but
//   where the table is Gloo's placeholder (one group named "" with no ranks: ProcessGroupGloo records
//   its group before Python names it), whose members are then the ranks whose dumps name the group;
// * a p2p name `send A->B` / `recv A<-B` carries group-local ranks (PyTorch writes them so): they
//   are resolved through the group's member list to global ranks, and A must be the dump's own rank.
// Bad input is a core::InputError naming the file, the record and the field.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppspec::traces {

enum class FrState : uint8_t { scheduled, started, completed };
const char* to_string(FrState s);

// What a record is, by its profiling name ("nccl:_broadcast_oop": broadcast_oop), as ProcessGroupNCCL
// and ProcessGroupGloo name their calls. Three names close a coalesced group: `coalesced`
// (batch_isend_irecv, _coalescing_manager with a device), `ALLGATHER_coalesced` (an all_gather of
// uneven sizes: a _broadcast_oop per member) and `REDUCE_SCATTER_coalesced` (a reduce_scatter of
// uneven sizes: a _reduce_oop per member); they carry the group's state and no sizes.
enum class FrKind : uint8_t {
  send,
  recv,
  broadcast,
  broadcast_oop,
  reduce,
  reduce_oop,
  all_reduce,
  all_reduce_barrier,
  allreduce_coalesced,
  all_gather,
  all_gather_base,
  all_gather_into_tensor_coalesced,
  reduce_scatter,
  reduce_scatter_base,
  reduce_scatter_tensor_coalesced,
  all_to_all,
  gather,
  scatter,
  barrier,
  coalesced,
  allgather_coalesced,
  reduce_scatter_coalesced,
  other,  // a name of no call above: compared whole, sizes included
};
FrKind fr_kind(std::string_view op);
// Whether no member completes the call before every member called it (an all_reduce, all_gather,
// reduce_scatter, all_to_all, barrier, and the closers of coalesced all_gathers and
// reduce_scatters); not so for a broadcast's root or a small send, which may finish first.
bool needs_every_member(FrKind k);
constexpr bool is_closer(FrKind k) {
  return k == FrKind::coalesced || k == FrKind::allgather_coalesced || k == FrKind::reduce_scatter_coalesced;
}

struct FrFrame {
  std::string name;  // the function
  std::string file;
  int64_t line = 0;
  auto operator<=>(const FrFrame&) const = default;
};
// A Python stack, innermost first. A job calls from few places: entries of one dump with the same
// stack share one (a dump's memory grows with its call sites, not its entries times their depth).
using FrStack = std::vector<FrFrame>;

struct FrEntry {
  int64_t record_id = -1;
  int64_t pg_id = -1;  // ProcessGroup's uid on this rank (informative: groups are named by `group`)
  std::string group;   // the process group's name: its key in pg_config
  int64_t collective_seq_id = -1;
  int64_t p2p_seq_id = -1;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:broadcast", "nccl:send 0->1", "gloo:all_reduce"
  std::string backend;         // "nccl", "gloo", "xccl", ... ("" when the name has no prefix)
  std::string op;              // "broadcast", "send", "recv", "coalesced", ...
  int peer_local = -1;         // p2p: the other side's group-local rank, as written
  int peer = -1;               // p2p: the other side's global rank
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::string> output_dtypes;
  FrKind kind = FrKind::other;
  FrState state = FrState::scheduled;
  // Wall-clock nanoseconds (0: not recorded): enqueued, found started, found completed.
  int64_t created_ns = 0, started_ns = 0, completed_ns = 0;
  int64_t op_id = -1;      // the group's count of logical operations (-1: not recorded)
  int64_t timeout_ms = 0;  // the group's watchdog timeout (0: not recorded)
  // The watchdog is done with it: NCCL retires a work once it completed or timed out (so retired
  // and not completed is a timeout); Gloo retires what it ran, and records no state.
  bool retired = false;
  std::shared_ptr<const FrStack> stack;  // the Python stack at the call (pickles only; null: none)
  const FrStack& frames() const {
    static const FrStack kNone;
    return stack ? *stack : kNone;
  }
  // The host thread that made the call, "name (id)" from `thread_name` and `thread_id` (PyTorch 2.5
  // on); "" when the dump does not say.
  std::string thread;
};

struct FrGroup {
  std::string name;
  std::string desc;        // "default_pg", "pp_broadcast", "undefined", ...
  std::vector<int> ranks;  // global ranks, in group-rank order
  // Not in the dump's group table (Gloo's placeholder): its members are the ranks whose dumps name
  // it (resolve_inferred_groups), in rank order; a member that never called on it is not seen.
  bool inferred = false;
};

struct FrDump {
  int rank = -1;
  std::string file;
  std::string version;
  std::string comm_lib_version;           // NCCL's version ("2.28.9"); "" for Gloo
  std::map<std::string, FrGroup> groups;  // by name
  std::vector<FrEntry> entries;           // in record order
  // The group table is Gloo's placeholder ({"": {"name": "", "ranks": "[]"}}): groups come from the
  // entries.
  bool placeholder_table = false;
  // Whether its states say what progressed: NCCL's do; Gloo's never leave `scheduled`.
  bool progress_recorded = true;
  // Taken at one moment with every other rank's, after all it records (a live view of the job, as
  // `ppspec watch` has): no dump predates what another records. Files never say so.
  bool same_moment = false;
};

// Bounds on what a dump may hold (PyTorch's default ring buffer is 2,000 entries).
inline constexpr size_t kFrEntriesMax = 1 << 20;
inline constexpr int kFrRanksMax = 1 << 16;
inline constexpr size_t kFrGroupsMax = 1 << 16;
inline constexpr size_t kFrTensorsMax = 1 << 12;  // tensors per entry, dimensions per tensor
inline constexpr size_t kFrFramesMax = 1 << 10;
inline constexpr int64_t kFrSizeMax = int64_t{1} << 48;  // one dimension of a tensor

// One dump, whichever format its content is in (JSON or pickle, told by its first byte).
FrDump read_fr_dump(const std::string& file, int rank);
// The same from the dump's bytes; `file` names it in errors.
FrDump parse_fr_dump(const std::string& bytes, const std::string& file, int rank);
// Gives the groups a placeholder table left without members (Gloo) the ranks whose dumps name them.
void resolve_inferred_groups(std::vector<FrDump>& dumps);
// Throws unless the dumps are of one run: one format and communication library version, every group
// two of them both belong to with the same members and description, and records that overlap in
// time (a job's ranks record side by side; two runs hours apart do not). read_fr_dir and
// read_fr_files check it.
void check_fr_one_run(const std::vector<FrDump>& dumps);

// Where dumps were found and under which file-name prefix (`rank_`, PyTorch's `nccl_trace_rank_`,
// a TORCH_FR_DUMP_TEMP_FILE of the user's).
struct FrDumpSet {
  std::vector<FrDump> dumps;  // by rank
  std::string prefix;
  std::string where;  // the folder, or the first file named
};

// Every dump of `dir` (or of its json/ or pickle/ folder): files named PREFIX + RANK, with an optional
// `.json`, `.pkl` or `.pickle`; PREFIX inferred when not given (as PyTorch's fr_trace does) and must be
// one. Throws when there is none, a dump is malformed, or the dumps are of different runs.
FrDumpSet read_fr_dir(const std::string& dir, const std::optional<std::string>& prefix = std::nullopt);
// The same for dump files named one by one.
FrDumpSet read_fr_files(const std::vector<std::string>& files, const std::optional<std::string>& prefix = std::nullopt);
// Whether `dir` looks like a folder of Flight Recorder dumps (so that `ppspec check` treats it as one).
bool is_fr_dir(const std::string& dir);
// Whether the file's content is a Flight Recorder dump rather than a ppspec trace: a pickle, or one
// JSON object that is not a ppspec trace's (nor a profiler plugin trace's) header line.
bool is_fr_file(const std::string& file);

}  // namespace ppspec::traces
