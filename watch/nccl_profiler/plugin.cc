// The entry points NCCL calls, and the tables it finds them by (ncclProfiler_v5, ncclProfiler_v6).
// What each event means for the trace (NCCL's src/plugin/profiler.cc and src/enqueue.cc, 2.28 on):
//   GroupApi start  the outermost ncclGroupStart..End of a thread; depth > 1: the user's own group
//   CollApi start   the user's collective call: kind, count, datatype, root, stream, capture: op_posted
//                   (op_captured under capture: a graph replay posts it)
//   P2pApi start    the user's send or recv call, without its peer: op_posted
//   Coll / P2p      the task, built at ncclGroupEnd (at every replay, for a captured call): its
//                   channel count; a p2p's peer (op_peer); a replay's op_posted
//   KernelCh        one channel of the task's kernel: the first start is op_started, the last stop
//                   op_completed
// NCCL gives no event to a collective of zero elements or of a one-rank communicator (it never
// takes a place in the order): neither does the trace. Every entry point returns success whatever
// happens (NCCL's rule for a profiler) and never throws.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "watch/nccl_profiler/abi.h"
#include "watch/nccl_profiler/hooks.h"
#include "watch/nccl_profiler/recorder.h"

namespace ppspec::nccl_profiler {
namespace {

thread_local char tls_call_site[kCallSiteBytes] = {};
constexpr int kRankFromEnvironment = -2;
thread_local int tls_rank = kRankFromEnvironment;

constexpr int kCallsMask = abi::kGroupApi | abi::kCollApi | abi::kP2pApi | abi::kColl | abi::kP2p;

int rank_from_environment() {
  for (const char* name : {"PPSPEC_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1 << 20)) return static_cast<int>(r);
  }
  return -1;
}

int32_t group_of(const void* parent) {
  const auto* h = static_cast<const Handle*>(parent);
  return h != nullptr && h->kind == HandleKind::group_api ? h->group : -1;
}

void fill_call(Record& r, RecordKind kind, const char* func, size_t count, const char* datatype, const void* stream,
               const void* parent) {
  Recorder& rec = Recorder::instance();
  r.kind = kind;
  r.func = func_of(func);
  r.datatype = datatype_of(datatype);
  r.count = static_cast<int64_t>(count);
  r.stream = rec.stream_number(stream);
  r.group = group_of(parent);
  std::memcpy(r.call_site, tls_call_site, kCallSiteBytes);
}

// A call under capture takes no place in the order: each replay of the graph posts it anew.
Handle* capture_call(Comm& c, const char* func, size_t count, const char* datatype, int root, const void* stream,
                     const void* parent) {
  CapturedOp* op = Recorder::instance().take_captured(c);
  if (op == nullptr) return nullptr;
  fill_call(op->captured, RecordKind::op_captured, func, count, datatype, stream, parent);
  if (is_rooted(op->captured.func)) op->captured.peer = root;
  Record line = op->captured;
  Recorder::instance().append(c, line);
  return &op->api;
}

Handle* start_collective_call(Comm& c, const abi::EventDescr& d) {
  const abi::CollApiDescr& a = d.coll_api;
  if (a.graph_captured) return capture_call(c, a.func, a.count, a.datatype, a.root, a.stream, d.parent);
  OpSlot& s = Recorder::instance().take_slot(c);
  fill_call(s.posted, RecordKind::op_posted, a.func, a.count, a.datatype, a.stream, d.parent);
  if (is_rooted(s.posted.func)) s.posted.peer = a.root;
  s.api.kind = HandleKind::coll_api;
  Record line = s.posted;
  Recorder::instance().append(c, line);
  return &s.api;
}

Handle* start_p2p_call(Comm& c, const abi::EventDescr& d) {
  const abi::P2pApiDescr& a = d.p2p_api;
  if (a.graph_captured) return capture_call(c, a.func, a.count, a.datatype, -1, a.stream, d.parent);
  OpSlot& s = Recorder::instance().take_slot(c);
  fill_call(s.posted, RecordKind::op_posted, a.func, a.count, a.datatype, a.stream, d.parent);
  s.api.kind = HandleKind::p2p_api;
  Record line = s.posted;
  Recorder::instance().append(c, line);
  return &s.api;
}

// A send to oneself and its receive run in NCCL's kernel with no proxy operation, so NCCL tells no
// kernel channel of them (enqueue.cc: nProxyOps = 0; seen on H200, NCCL 2.28.9): their slot is free
// once the task is built. The readers take them as completed with their group.
void release_if_self(const Comm& c, OpSlot& s, const abi::EventDescr& d) {
  if (d.type == abi::kP2p && d.p2p.peer == c.rank) s.open.store(false, std::memory_order_release);
}

// A replay of a captured call: an operation of its own, posted now with everything known.
Handle* start_replay(Comm& c, const CapturedOp& captured, const abi::EventDescr& d) {
  Recorder& rec = Recorder::instance();
  OpSlot& s = rec.take_slot(c);
  const uint64_t op = s.posted.op;
  s.posted = captured.captured;
  s.posted.kind = RecordKind::op_posted;
  s.posted.op = op;
  s.posted.time_ns = 0;
  s.posted.captured = true;
  s.posted.replay_of = captured.captured.op;
  if (d.type == abi::kP2p) s.posted.peer = d.p2p.peer;
  s.channels.store(d.type == abi::kP2p ? d.p2p.channels : d.coll.channels, std::memory_order_relaxed);
  Record line = s.posted;
  rec.append(c, line);
  release_if_self(c, s, d);
  return &s.task;
}

// A task (its parent is the call's handle): how many channels it runs on; a p2p's peer.
Handle* start_task(Comm& c, const abi::EventDescr& d) {
  auto* parent = static_cast<Handle*>(d.parent);
  if (parent == nullptr) return nullptr;
  if (parent->kind == HandleKind::captured_api) return start_replay(c, *parent->captured, d);
  if (parent->kind != HandleKind::coll_api && parent->kind != HandleKind::p2p_api) return nullptr;
  OpSlot& s = *parent->slot;
  if (d.type == abi::kP2p) {
    if (parent->kind != HandleKind::p2p_api) return nullptr;
    s.posted.peer = d.p2p.peer;
    Record r;
    r.kind = RecordKind::op_peer;
    r.op = s.posted.op;
    r.peer = d.p2p.peer;
    Recorder::instance().append(c, r);
    s.channels.store(d.p2p.channels, std::memory_order_relaxed);
    release_if_self(c, s, d);
  } else {
    s.channels.store(d.coll.channels, std::memory_order_relaxed);
  }
  return &s.task;
}

void progress_record(OpSlot& s, RecordKind kind) {
  Record r;
  r.kind = kind;
  r.op = s.posted.op;
  Recorder::instance().append(*s.comm, r);
}

Handle* start_kernel_channel(const abi::EventDescr& d) {
  auto* parent = static_cast<Handle*>(d.parent);
  if (parent == nullptr || parent->kind != HandleKind::task) return nullptr;
  OpSlot& s = *parent->slot;
  if (s.channels_started.fetch_add(1, std::memory_order_acq_rel) == 0) progress_record(s, RecordKind::op_started);
  return &s.channel;
}

void stop_kernel_channel(OpSlot& s) {
  const int done = s.channels_done.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (done < s.channels.load(std::memory_order_relaxed) || !s.open.exchange(false, std::memory_order_acq_rel)) return;
  progress_record(s, RecordKind::op_completed);
}

abi::Result init(int interface, void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                 int ranks, int rank) noexcept {
  *context = nullptr;
  Recorder& rec = Recorder::instance();
  if (!rec.enabled()) return abi::kInternalError;  // NCCL goes on without the plugin for this communicator
  try {
    Comm* c = rec.init_comm(comm_id, comm_name, ranks, rank,
                            tls_rank != kRankFromEnvironment ? tls_rank : rank_from_environment());
    if (c == nullptr) return abi::kInternalError;
    c->interface = interface;
    *context = c;
    *activation_mask = rec.completions() ? kCallsMask | abi::kKernelCh : kCallsMask;
  } catch (const std::exception& e) {
    rec.disable(e.what());
    return abi::kInternalError;
  }
  return abi::kSuccess;
}

[[maybe_unused]] abi::Result init_v5(void** context, uint64_t comm_id, int* mask, const char* name, int, int ranks,
                                     int rank, abi::Logger) noexcept {
  return init(5, context, comm_id, mask, name, ranks, rank);
}
abi::Result init_v6(void** context, uint64_t comm_id, int* mask, const char* name, int, int ranks, int rank,
                    abi::Logger) noexcept {
  return init(6, context, comm_id, mask, name, ranks, rank);
}

abi::Result start_event(void* context, void** handle, abi::EventDescr* d) noexcept {
  *handle = nullptr;
  if (context == nullptr || d == nullptr || !Recorder::instance().enabled()) return abi::kSuccess;
  Comm& c = *static_cast<Comm*>(context);
  Handle* h = nullptr;
  switch (d->type) {
    case abi::kGroupApi:
      h = Recorder::instance().take_group(c, d->group_api.group_depth > 1, d->group_api.graph_captured);
      break;
    case abi::kCollApi: h = start_collective_call(c, *d); break;
    case abi::kP2pApi: h = start_p2p_call(c, *d); break;
    case abi::kColl:
    case abi::kP2p: h = start_task(c, *d); break;
    case abi::kKernelCh: h = start_kernel_channel(*d); break;
    default: break;  // proxies, launches, copy-engine work: nothing the checks need
  }
  *handle = h;
  return abi::kSuccess;
}

abi::Result stop_event(void* handle) noexcept {
  if (handle == nullptr || !Recorder::instance().enabled()) return abi::kSuccess;
  auto* h = static_cast<Handle*>(handle);
  if (h->kind == HandleKind::kernel_channel) stop_kernel_channel(*h->slot);
  if (h->kind == HandleKind::group_api && h->capturing) {
    Record r;
    r.kind = RecordKind::group_ended;
    r.group = h->group;
    Recorder::instance().append(*h->comm, r);
  }
  return abi::kSuccess;
}

abi::Result record_event_state(void*, int, abi::EventStateArgs*) noexcept { return abi::kSuccess; }

abi::Result finalize(void* context) noexcept {
  if (context != nullptr && Recorder::instance().enabled())
    Recorder::instance().finalize_comm(*static_cast<Comm*>(context));
  return abi::kSuccess;
}

void set_clock(int64_t (*clock)()) { Recorder::instance().set_clock(clock); }
void flush() { Recorder::instance().flush(); }
int begin_job(const char* dir) {
  Recorder::instance().begin_job(dir != nullptr ? dir : "");
  return Recorder::instance().enabled() ? 0 : 1;
}
void end_job() { Recorder::instance().end_job(); }

}  // namespace
}  // namespace ppspec::nccl_profiler

namespace npp = ppspec::nccl_profiler;

extern "C" {

__attribute__((visibility("default"))) void ppspec_profiler_set_call_site(const char* site) {
  std::snprintf(npp::tls_call_site, sizeof npp::tls_call_site, "%s", site != nullptr ? site : "");
}

__attribute__((visibility("default"))) void ppspec_profiler_set_rank(int rank) {
  npp::tls_rank = rank >= 0 ? rank : npp::kRankFromEnvironment;
}

#ifdef PPSPEC_PROFILER_FUTURE_INTERFACE_ONLY
// A plugin built for an interface this NCCL does not know (the version-mismatch proof): NCCL finds
// no table it can load and goes on without a profiler.
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v99;
const npp::abi::ProfilerTable ncclProfiler_v99 = {
    "ppspec", npp::init_v6, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
#else
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v5;
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v6;
const npp::abi::ProfilerTable ncclProfiler_v5 = {
    "ppspec", npp::init_v5, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
const npp::abi::ProfilerTable ncclProfiler_v6 = {
    "ppspec", npp::init_v6, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
#endif

__attribute__((visibility("default"))) extern const npp::HooksTable ppspecProfilerHooks_v1;
const npp::HooksTable ppspecProfilerHooks_v1 = {
    npp::kHooksVersion, npp::set_clock, ppspec_profiler_set_call_site, ppspec_profiler_set_rank, npp::flush,
    npp::begin_job,     npp::end_job};
}
