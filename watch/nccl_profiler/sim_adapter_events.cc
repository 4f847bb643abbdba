// SimAdapter's calls, tasks and kernels: the events NCCL starts and stops for each, in its order.
#include <algorithm>

#include "core/assert.h"
#include "watch/nccl_profiler/sim_adapter.h"

namespace ppspec::nccl_profiler {
namespace {

// NCCL gives a one-member communicator's collective no event: it copies locally
// (taskAppend: ncclLaunchOneRank), before any profiler call.
bool told_to_profiler(const sim::ObservedCall& c) { return core::is_p2p(c.desc.kind) || c.comm_size > 1; }

// The kernel channels a task runs on: NCCL's choice from sizes and topology; any fixed rule
// exercises the plugin's counting, and two channels for a collective make it count. A send to
// oneself and its receive have none NCCL tells of: no proxy operation (enqueue.cc: nProxyOps = 0).
int channels_of(bool p2p, bool self) { return !p2p ? 2 : self ? 0 : 1; }

bool is_self_p2p(const sim::ObservedCall& c) { return core::is_p2p(c.desc.kind) && c.peer_comm_rank == c.comm_rank; }

bool is_p2p_name(const char* func) { return func[0] == 'S' || func[0] == 'R'; }  // "Send", "Recv"

}  // namespace

void* SimAdapter::group(const sim::ObservedCall& call) {
  if (auto it = groups_.find(call.host); it != groups_.end()) return it->second.handle;
  abi::EventDescr d{};
  d.type = abi::kGroupApi;
  d.group_api.graph_captured = call.capture_id >= 0;
  d.group_api.group_depth = call.grouped ? 2 : 1;  // NCCL's implicit group inside the user's, or alone
  void* h = start(context(call.rank, call.comm), d);
  groups_[call.host].handle = h;
  return h;
}

void SimAdapter::call_api(const sim::ObservedCall& call, void* ctx, const char* func, int64_t count, void* parent,
                          std::vector<void*>& handles) {
  abi::EventDescr d{};
  d.parent = parent;
  void* stream = const_cast<void*>(call.stream);
  const bool captured = call.capture_id >= 0;
  if (is_p2p_name(func)) {
    d.type = abi::kP2pApi;
    d.p2p_api =
        abi::P2pApiDescr{func, static_cast<size_t>(count), nccl_datatype_name(call.desc.dtype), stream, captured};
  } else {
    d.type = abi::kCollApi;
    d.coll_api = abi::CollApiDescr{func,
                                   static_cast<size_t>(count),
                                   nccl_datatype_name(call.desc.dtype),
                                   std::max(call.peer_comm_rank, 0),
                                   stream,
                                   captured};
  }
  void* h = start(ctx, d);
  table_.stop_event(h);  // NCCL stops an API event once the call is queued: the task's parent lives on
  handles.push_back(h);
}

void SimAdapter::called(core::Time t, const sim::ObservedCall& call) {
  set_time(t);
  void* ctx = context(call.rank, call.comm);
  if (ctx == nullptr || !told_to_profiler(call)) return;
  void* parent = group(call);
  (call.capture_id < 0 ? groups_[call.host].calls : groups_[call.host].captured)
      .emplace_back(call, std::make_pair(std::string(call.comm), std::string(call.origin)));
  if (call.capture_id < 0)
    posted_ += call.desc.kind == core::OpKind::all_to_all ? 2 * static_cast<uint64_t>(call.comm_size) : 1;
  const std::string site(call.origin);
  lib_.hooks().set_call_site(site.c_str());
  std::vector<void*>& handles = call.capture_id >= 0 ? captured_[call.capture_id] : api_[call.op_id];
  if (call.desc.kind == core::OpKind::all_to_all) {
    // NCCL's taskAppend: a send and a recv per member, each a p2p call of the per-member count.
    const int64_t each = call.desc.count / std::max(call.comm_size, 1);
    for (int r = 0; r < call.comm_size; ++r) {
      call_api(call, ctx, "Send", each, parent, handles);
      call_api(call, ctx, "Recv", each, parent, handles);
    }
  } else {
    call_api(call, ctx, nccl_func_name(call.desc.kind), call.desc.count, parent, handles);
  }
  flushed(t);
}

void SimAdapter::build_task(const sim::ObservedCall& call, void* ctx, void* api_handle, const char* func, int peer,
                            std::vector<Task>& tasks) {
  abi::EventDescr d{};
  d.parent = api_handle;
  d.rank = call.comm_rank;
  const bool p2p = is_p2p_name(func);
  if (p2p) {
    d.type = abi::kP2p;
    d.p2p = abi::P2pDescr{func,
                          nullptr,
                          nccl_datatype_name(call.desc.dtype),
                          static_cast<size_t>(call.desc.count),
                          peer,
                          static_cast<uint8_t>(channels_of(true, false)),
                          nullptr};
  } else {
    // NCCL's task of an all_gather or a broadcast counts bytes of int8 (collTaskAppend).
    const bool bytes = call.desc.kind == core::OpKind::all_gather || call.desc.kind == core::OpKind::broadcast;
    const int64_t count =
        bytes ? call.desc.count * static_cast<int64_t>(core::dtype_size(call.desc.dtype)) : call.desc.count;
    d.type = abi::kColl;
    d.coll = abi::CollDescr{coll_seq_[{ctx, static_cast<int>(call.desc.kind)}]++,
                            func,
                            nullptr,
                            nullptr,
                            static_cast<size_t>(count),
                            std::max(call.peer_comm_rank, 0),
                            bytes ? "ncclInt8" : nccl_datatype_name(call.desc.dtype),
                            static_cast<uint8_t>(channels_of(false, false)),
                            8,
                            "RING",
                            "SIMPLE",
                            nullptr};
  }
  void* h = start(ctx, d);
  table_.stop_event(h);  // NCCL stops a task event once its proxy work is queued, before its kernel runs
  tasks.push_back(Task{ctx, h, channels_of(p2p, peer == call.comm_rank), {}});
}

void SimAdapter::task_built(core::Time t, const sim::ObservedCall& call) {
  set_time(t);
  void* ctx = context(call.rank, call.comm);
  if (ctx == nullptr || !told_to_profiler(call)) return;
  // A replay's parents are the captured calls' handles, kept for every replay; a live call's are its own.
  const bool replay = call.capture_id >= 0;
  if (replay && built_at_capture_.contains(call.capture_id)) return;  // NCCL tells no profiler of this replay
  if (replay) posted_ += call.desc.kind == core::OpKind::all_to_all ? 2 * static_cast<uint64_t>(call.comm_size) : 1;
  std::vector<void*> handles = replay ? captured_[call.capture_id] : std::move(api_[call.op_id]);
  if (!replay) api_.erase(call.op_id);
  std::vector<Task>& tasks = tasks_[call.op_id];
  if (call.desc.kind == core::OpKind::all_to_all) {
    PPSPEC_ASSERT(handles.size() == 2 * static_cast<size_t>(call.comm_size),
                  "an all_to_all's calls: a send and a recv per member");
    for (int r = 0; r < call.comm_size; ++r) {
      build_task(call, ctx, handles[2 * static_cast<size_t>(r)], "Send", r, tasks);
      build_task(call, ctx, handles[2 * static_cast<size_t>(r) + 1], "Recv", r, tasks);
    }
  } else {
    PPSPEC_ASSERT(handles.size() == 1, "op {} on '{}' has {} API handles", call.op_id, call.comm, handles.size());
    build_task(call, ctx, handles.front(), nccl_func_name(call.desc.kind), call.peer_comm_rank, tasks);
  }
  flushed(t);
}

// A captured group's plan for one communicator has proxy operations (and a host node that builds
// its tasks at every replay) unless every call in it is a send to oneself or its receive: then NCCL
// builds its tasks once, at capture, and the replays run without a word to the profiler.
void SimAdapter::build_at_capture(core::Time t, std::vector<OwnedCall>& captured) {
  std::map<std::string, bool> all_self;  // by communicator
  for (const auto& [call, owned] : captured) {
    auto [it, fresh] = all_self.emplace(owned.first, true);
    it->second = it->second && is_self_p2p(call);
  }
  for (auto& [call, owned] : captured) {
    if (!all_self.at(owned.first)) continue;
    call.comm = owned.first;
    call.origin = owned.second;
    sim::ObservedCall at_capture = call;
    at_capture.op_id = -1 - call.capture_id;  // no kernel of it is ever told: a key of its own
    task_built(t, at_capture);
    built_at_capture_.insert(call.capture_id);
  }
}

void SimAdapter::group_ended(core::Time t, const void* host) {
  set_time(t);
  const auto it = groups_.find(host);
  if (it == groups_.end()) return;
  build_at_capture(t, it->second.captured);
  if (it->second.handle != nullptr) table_.stop_event(it->second.handle);
  groups_.erase(it);
  flushed(t);
}

void SimAdapter::end_halted_groups(core::Time t) {
  std::vector<const void*> hosts;
  for (const auto& [host, g] : groups_)
    if (!g.calls.empty()) hosts.push_back(host);
  for (const void* host : hosts) {
    for (auto& [call, owned] : groups_.at(host).calls) {
      if (!api_.contains(call.op_id)) continue;  // its task was built: the group ended for it
      call.comm = owned.first;                   // the views name the adapter's copies, not the simulator's
      call.origin = owned.second;
      task_built(t, call);
    }
    group_ended(t, host);
  }
}

void SimAdapter::kernel_started(core::Time t, int64_t op_id) {
  set_time(t);
  const auto it = tasks_.find(op_id);
  if (it == tasks_.end()) return;  // an operation NCCL tells no profiler of
  for (Task& task : it->second)
    for (int ch = 0; ch < task.channels; ++ch) {  // none for a send to oneself: NCCL tells no kernel of it
      abi::EventDescr d{};
      d.type = abi::kKernelCh;
      d.parent = task.handle;
      d.kernel_ch = abi::KernelChDescr{static_cast<uint8_t>(ch), static_cast<uint64_t>(t)};
      task.running.push_back(start(task.context, d));
    }
  flushed(t);
}

void SimAdapter::kernel_completed(core::Time t, int64_t op_id) {
  set_time(t);
  const auto it = tasks_.find(op_id);
  if (it == tasks_.end()) return;
  for (Task& task : it->second)
    for (void* ch : task.running) {
      abi::EventStateArgs args{};
      args.kernel_ch.gpu_timer = static_cast<uint64_t>(t);
      table_.record_event_state(ch, abi::kKernelChStop, &args);
      table_.stop_event(ch);
    }
  tasks_.erase(it);
  flushed(t);
}

}  // namespace ppspec::nccl_profiler
