// What the plugin's callbacks append for the flusher to write: one fixed-size record per fact
// (a communicator initialised, an operation posted, an operation completed), so that appending
// allocates nothing and copies one cache line or two.
#pragma once

#include <cstdint>

namespace ppspec::nccl_profiler {

enum class RecordKind : uint8_t { comm_init, op_posted, op_completed, comm_finalized };

// NCCL's operation names (ncclFuncToString) that the trace can hold, in core::OpKind's spelling
// order of the trace; `other` keeps the operation counted (and reported) when NCCL names one ppspec
// has no kind for.
enum class Func : uint8_t { send, recv, broadcast, all_reduce, all_gather, all_to_all, reduce, reduce_scatter, other };

// NCCL's datatype names (ncclDatatypeToString). NCCL 2.28 names uint8 "Unknown".
enum class Datatype : uint8_t { int8, uint8, int32, uint32, int64, uint64, float16, float32, float64, bfloat16, float8e4m3, float8e5m2, unknown };

inline constexpr int kCallSiteBytes = 56;

struct Record {
  RecordKind kind = RecordKind::op_posted;
  Func func = Func::other;
  Datatype datatype = Datatype::unknown;
  bool captured = false;
  int32_t peer = -1;      // the communicator rank of a send's or recv's peer, or a rooted collective's root; -1
  uint32_t stream = 0;    // the stream's number in this process, 1 on (0: none)
  int64_t time_ns = 0;
  uint64_t op = 0;        // the operation's number on its communicator in this process
  int64_t count = 0;      // elements
  char call_site[kCallSiteBytes] = {};  // what the host program said of the call (ppspecProfilerHooks_v1), or empty
};

Func func_of(const char* nccl_name);
Datatype datatype_of(const char* nccl_name);
const char* trace_name(Func f);      // "all_reduce", ...
const char* trace_name(Datatype d);  // "f32", ...

}  // namespace ppspec::nccl_profiler
