// What the plugin's callbacks append for the flusher to write: one fixed-size record per fact, so
// that appending allocates nothing. The facts, in the order NCCL reveals them (README.md of this
// folder, "What NCCL tells the plugin, and when"):
//   op_posted     a collective's API call (its position on the communicator is taken here); a send's
//                 or recv's API call, whose peer NCCL names only when it builds the task (op_peer);
//                 a graph replay of a captured operation (its task), with everything known
//   op_peer       the peer of a send or recv posted earlier, from its task at ncclGroupEnd
//   op_captured   an API call under CUDA-graph capture: no position until a replay posts it
//   op_started    the first kernel channel of the operation's task started on the GPU
//   op_completed  the last of its task's kernel channels finished
//   group_ended   the ncclGroupEnd of a group that captured calls returned: a capture connecting at
//                 first contact can hang inside it, and nothing else tells that it did not
#pragma once

#include <cstdint>

namespace ppspec::nccl_profiler {

enum class RecordKind : uint8_t {
  comm_init,
  op_posted,
  op_peer,
  op_captured,
  op_started,
  op_completed,
  comm_finalized,
  group_ended
};

// NCCL's operation names (ncclFuncToString) that the trace can hold; `other` keeps an operation
// counted (and reported) when NCCL names one ppspec has no kind for. NCCL turns all_to_all,
// gather and scatter into sends and receives before the profiler sees them.
enum class Func : uint8_t { send, recv, broadcast, all_reduce, all_gather, all_to_all, reduce, reduce_scatter, other };

// NCCL's datatype names (ncclDatatypeToString). NCCL 2.28 names uint8 "Unknown".
enum class Datatype : uint8_t {
  int8,
  uint8,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  float32,
  float64,
  bfloat16,
  float8e4m3,
  float8e5m2,
  unknown
};

inline constexpr int kCallSiteBytes = 48;

struct Record {
  RecordKind kind = RecordKind::op_posted;
  Func func = Func::other;
  Datatype datatype = Datatype::unknown;
  bool captured = false;   // op_posted: a graph replay
  int32_t peer = -1;       // communicator rank: a send's or recv's peer, a rooted collective's root; -1: none (yet)
  int32_t group = -1;      // the user's ncclGroupStart..End the call was made in, numbered per process; -1: none
  uint32_t stream = 0;     // the stream's number in this process, 1 on (0: none)
  uint64_t sequence = 0;   // the record's number in the process: the flusher writes in this order
  uint64_t op = 0;         // the operation's number on its communicator in this process
  uint64_t replay_of = 0;  // op_posted of a replay: the op_captured it re-issues
  int64_t time_ns = 0;
  int64_t count = 0;  // elements, as the user passed them to NCCL
  char call_site[kCallSiteBytes] =
      {};  // what the host program said of the call (ppspec_profiler_set_call_site), or empty
};

Func func_of(const char* nccl_name);
Datatype datatype_of(const char* nccl_name);
const char* trace_name(Func f);      // "all_reduce", ...
const char* trace_name(Datatype d);  // "f32", ...
bool is_p2p(Func f);
bool is_rooted(Func f);

}  // namespace ppspec::nccl_profiler
