// The entry points NCCL calls, and the tables it finds them by (ncclProfiler_v5, ncclProfiler_v6).
// What each event means for the trace (plugins/profiler/README.md, "Event hierarchy"):
//   CollApi start   the user's collective call: its kind, count, datatype, root, stream, capture: op_posted
//   P2pApi start    the user's send or recv call, without its peer: held in the operation's slot
//   P2p start       its task at ncclGroupEnd, with the peer: op_posted
//   Coll / P2p      their channel count: how many kernel channels must finish
//   KernelCh stop   one channel finished on the GPU; the last one completes the operation: op_completed
// Every entry point returns success whatever happens (NCCL's rule for a profiler) and never throws.
#include <cstdio>
#include <cstring>
#include <exception>

#include "nccl_profiler/abi.h"
#include "nccl_profiler/hooks.h"
#include "nccl_profiler/recorder.h"

namespace ppspec::nccl_profiler {
namespace {

thread_local char tls_call_site[kCallSiteBytes] = {};

constexpr int kActivationMask = abi::kCollApi | abi::kP2pApi | abi::kColl | abi::kP2p | abi::kKernelCh;

bool rooted(Func f) { return f == Func::broadcast || f == Func::reduce; }

void fill_call(Record& r, const char* func, size_t count, const char* datatype, const void* stream, bool captured) {
  Recorder& rec = Recorder::instance();
  r.kind = RecordKind::op_posted;
  r.func = func_of(func);
  r.datatype = datatype_of(datatype);
  r.count = static_cast<int64_t>(count);
  r.stream = rec.stream_number(stream);
  r.captured = captured;
  r.time_ns = rec.now_ns();
  std::memcpy(r.call_site, tls_call_site, kCallSiteBytes);
}

Handle* start_collective_call(Comm& c, const abi::CollApiDescr& d) {
  OpSlot& s = Recorder::instance().take_slot(c);
  fill_call(s.posted, d.func, d.count, d.datatype, d.stream, d.graph_captured);
  if (rooted(s.posted.func)) s.posted.peer = d.root;
  s.api.kind = HandleKind::coll_api;
  Recorder::instance().append(c, s.posted);
  return &s.api;
}

Handle* start_p2p_call(Comm& c, const abi::P2pApiDescr& d) {
  OpSlot& s = Recorder::instance().take_slot(c);
  fill_call(s.posted, d.func, d.count, d.datatype, d.stream, d.graph_captured);
  s.api.kind = HandleKind::p2p_api;
  return &s.api;
}

// A task (its parent is the call's handle): how many channels it runs on; a p2p is posted now.
Handle* start_task(const abi::EventDescr& d) {
  auto* parent = static_cast<Handle*>(d.parent);
  if (parent == nullptr || (parent->kind != HandleKind::coll_api && parent->kind != HandleKind::p2p_api)) return nullptr;
  OpSlot& s = *parent->slot;
  if (d.type == abi::kP2p) {
    if (parent->kind != HandleKind::p2p_api) return nullptr;
    s.posted.peer = d.p2p.peer;
    s.posted.time_ns = Recorder::instance().now_ns();
    Recorder::instance().append(*s.comm, s.posted);
    s.channels.store(d.p2p.channels, std::memory_order_relaxed);
  } else {
    s.channels.store(d.coll.channels, std::memory_order_relaxed);
  }
  return &s.task;
}

Handle* start_kernel_channel(const abi::EventDescr& d) {
  auto* parent = static_cast<Handle*>(d.parent);
  if (parent == nullptr || parent->kind != HandleKind::task) return nullptr;
  return &parent->slot->channel;
}

void stop_kernel_channel(OpSlot& s) {
  const int done = s.channels_done.fetch_add(1, std::memory_order_acq_rel) + 1;
  // A graph's replays stop the same channels again: the operation completed at the first.
  if (done < s.channels.load(std::memory_order_relaxed) || !s.open.exchange(false, std::memory_order_acq_rel)) return;
  Record r;
  r.kind = RecordKind::op_completed;
  r.op = s.posted.op;
  r.time_ns = Recorder::instance().now_ns();
  Recorder::instance().append(*s.comm, r);
}

abi::Result init(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int, int ranks, int rank, abi::Logger) noexcept {
  *context = nullptr;
  Recorder& rec = Recorder::instance();
  if (!rec.enabled()) return abi::kInternalError;  // NCCL goes on without the plugin for this communicator
  try {
    *context = rec.init_comm(comm_id, comm_name, ranks, rank);
    *activation_mask = kActivationMask;
  } catch (const std::exception& e) {
    rec.disable(e.what());
    return abi::kInternalError;
  }
  return abi::kSuccess;
}

abi::Result start_event(void* context, void** handle, abi::EventDescr* d) noexcept {
  *handle = nullptr;
  if (context == nullptr || d == nullptr || !Recorder::instance().enabled()) return abi::kSuccess;
  Comm& c = *static_cast<Comm*>(context);
  Handle* h = nullptr;
  switch (d->type) {
    case abi::kCollApi: h = start_collective_call(c, d->coll_api); break;
    case abi::kP2pApi: h = start_p2p_call(c, d->p2p_api); break;
    case abi::kColl:
    case abi::kP2p: h = start_task(*d); break;
    case abi::kKernelCh: h = start_kernel_channel(*d); break;
    default: break;  // groups, proxies, launches: nothing the checks need
  }
  *handle = h;
  return abi::kSuccess;
}

abi::Result stop_event(void* handle) noexcept {
  if (handle == nullptr || !Recorder::instance().enabled()) return abi::kSuccess;
  auto* h = static_cast<Handle*>(handle);
  if (h->kind == HandleKind::kernel_channel) stop_kernel_channel(*h->slot);
  return abi::kSuccess;
}

abi::Result record_event_state(void*, int, abi::EventStateArgs*) noexcept { return abi::kSuccess; }

abi::Result finalize(void* context) noexcept {
  if (context != nullptr) Recorder::instance().finalize_comm(*static_cast<Comm*>(context));
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

#ifdef PPSPEC_PROFILER_FUTURE_INTERFACE_ONLY
// A plugin built for an interface this NCCL does not know (the version-mismatch proof): NCCL finds
// no table it can load and goes on without a profiler.
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v99;
const npp::abi::ProfilerTable ncclProfiler_v99 = {"ppspec", npp::init, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
#else
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v5;
__attribute__((visibility("default"))) extern const npp::abi::ProfilerTable ncclProfiler_v6;
const npp::abi::ProfilerTable ncclProfiler_v5 = {"ppspec", npp::init, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
const npp::abi::ProfilerTable ncclProfiler_v6 = {"ppspec", npp::init, npp::start_event, npp::stop_event, npp::record_event_state, npp::finalize};
#endif

__attribute__((visibility("default"))) extern const npp::HooksTable ppspecProfilerHooks_v1;
const npp::HooksTable ppspecProfilerHooks_v1 = {npp::kHooksVersion, npp::set_clock, ppspec_profiler_set_call_site, npp::flush, npp::begin_job,
                                                npp::end_job};
}
