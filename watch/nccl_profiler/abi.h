// NCCL's profiler-plugin interface, versions 5 (NCCL 2.26 to 2.28) and 6 (2.29 on), declared here
// from its documentation (plugins/profiler/README.md in NCCL's repository) and its published
// headers: the layout of these structs is the contract NCCL loads a plugin by, so every field
// below sits where NCCL puts it, in NCCL's order, with NCCL's types. Only what ppspec reads is
// named; what it never reads keeps its place as a typed field all the same. No NCCL source is
// compiled into ppspec: NCCL finds the two exported tables (plugin.cc) with dlsym.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace ppspec::nccl_profiler::abi {

// ncclResult_t: a plugin returns success, except from init, whose failure makes NCCL disable it.
enum Result : int { kSuccess = 0, kInternalError = 3 };

// The event types (ncclProfile*), one bit each: init's activation mask is their union.
enum EventType : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,  // a collective task, built at ncclGroupEnd (or the implicit one)
  kP2p = 1u << 2,   // a send or recv task, likewise
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,  // one channel of the kernel that runs a task: its stop is the task's progress on the GPU
  kNetPlugin = 1u << 7,
  kGroupApi = 1u << 8,
  kCollApi = 1u << 9,  // the user's call of a collective, at API time
  kP2pApi = 1u << 10,  // the user's call of ncclSend / ncclRecv, at API time (the peer is on the task)
  kKernelLaunch = 1u << 11,
  kCeColl = 1u << 12,  // v6: a collective run by the copy engines
  kCeSync = 1u << 13,
  kCeBatch = 1u << 14,
};

// ncclProfilerEventState_t values ppspec reacts to.
enum EventState : int {
  kKernelChStop = 22,  // the kernel's channel finished; the event's stop follows
  kGroupStartApiStop = 23,
  kGroupEndApiStart = 24,
  kCeCollComplete = 26,
};

enum LogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3 };
using Logger = void (*)(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// The descriptor NCCL passes to startEvent. v6 extends v5's union with three copy-engine members;
// every member both share lies at the same offset, so one reader serves both.
struct GroupApiDescr {
  bool graph_captured;
  int group_depth;
};
struct CollApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graph_captured;
};
struct P2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graph_captured;
};
struct KernelLaunchDescr {
  void* stream;
};
struct CollDescr {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;  // bytes for all_gather and broadcast (NCCL turns them into int8 tasks)
  int root;
  const char* datatype;
  uint8_t channels;
  uint8_t warps;
  const char* algorithm;
  const char* protocol;
  void* parent_group;
};
struct P2pDescr {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;  // rank in the communicator
  uint8_t channels;
  void* parent_group;
};
struct ProxyOpDescr {
  pid_t pid;
  uint8_t channel;
  int peer;
  int steps;
  int chunk_size;
  int is_send;
};
struct ProxyStepDescr {
  int step;
};
struct KernelChDescr {
  uint8_t channel;
  uint64_t gpu_timer;
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};
struct CeCollDescr {  // v6
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  const char* sync_strategy;
  bool intra_batch_sync;
  uint32_t batch_size;
  uint32_t batches;
  uint32_t ce_seq_number;
  void* stream;
};
struct CeSyncDescr {
  bool complete;
  int ranks;
};
struct CeBatchDescr {
  int ops;
  size_t total_bytes;
  bool intra_sync;
};

struct EventDescr {
  uint64_t type;  // one EventType
  void* parent;   // the handle this plugin returned for the parent event (hierarchy in the README)
  int rank;
  union {
    GroupApiDescr group_api;
    CollApiDescr coll_api;
    P2pApiDescr p2p_api;
    KernelLaunchDescr kernel_launch;
    CollDescr coll;
    P2pDescr p2p;
    ProxyOpDescr proxy_op;
    ProxyStepDescr proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
    CeCollDescr ce_coll;  // v6 only: never read from a v5 descriptor
    CeSyncDescr ce_sync;
    CeBatchDescr ce_batch;
  };
};

union EventStateArgs {
  struct {
    size_t trans_size;
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    uint64_t gpu_timer;
  } kernel_ch;
};

// ncclProfiler_v5_t and ncclProfiler_v6_t: the same five entry points (v6's descriptor is the
// larger union above, which is passed by pointer).
struct ProfilerTable {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int nodes, int ranks,
                 int rank, Logger log);
  Result (*start_event)(void* context, void** handle, EventDescr* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, EventStateArgs* args);
  Result (*finalize)(void* context);
};

// The offsets NCCL's headers give (checked at compile time, x86-64 and aarch64 alike).
static_assert(offsetof(EventDescr, coll_api) == 24);
static_assert(offsetof(CollApiDescr, root) == 24 && offsetof(CollApiDescr, stream) == 32 &&
              offsetof(CollApiDescr, graph_captured) == 40);
static_assert(offsetof(P2pApiDescr, stream) == 24 && offsetof(P2pApiDescr, graph_captured) == 32);
static_assert(offsetof(CollDescr, count) == 32 && offsetof(CollDescr, channels) == 56 &&
              offsetof(CollDescr, parent_group) == 80);
static_assert(offsetof(P2pDescr, peer) == 32 && offsetof(P2pDescr, channels) == 36 &&
              offsetof(P2pDescr, parent_group) == 40);
static_assert(offsetof(KernelChDescr, gpu_timer) == 8);
static_assert(sizeof(CeCollDescr) == 88);

}  // namespace ppspec::nccl_profiler::abi
