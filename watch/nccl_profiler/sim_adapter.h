// The simulator drives the real plugin: the shared library NCCL loads is opened with dlopen, and
// every simulated communicator, call, task and kernel becomes the entry-point calls NCCL makes for
// it, in NCCL's order (sim/nccl_observer.h says when): init per member; a GroupApi event for a
// thread's outermost group; a CollApi or P2pApi event per call (an all_to_all as NCCL splits it,
// a send and a recv per member); at group end a Coll or P2p task per call, its parent the call's
// handle (at each graph replay, the captured call's); KernelCh events as the kernel starts and
// completes. What NCCL tells no profiler, the adapter does not (measured on H200, NCCL 2.28.9, and
// read in its enqueue.cc): collectives of a one-member communicator (NCCL copies them locally); a
// kernel channel of a send to oneself or its receive (no proxy operation, so no KernelCh event);
// the replays of a captured group whose calls are all sends to oneself and their receives (a plan
// without proxy operations has its tasks built once, at capture). The plugin writes its traces as
// in a real job, on the simulator's clock; `ppspec watch` then reads them as it reads a real job's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "watch/nccl_profiler/abi.h"
#include "watch/nccl_profiler/hooks.h"
#include "sim/nccl_observer.h"

namespace ppspec::nccl_profiler {

// The plugin as NCCL finds it: a shared library with ncclProfiler_v5 / _v6 and ppspec's hooks.
class PluginLibrary {
 public:
  // Throws std::runtime_error saying what is missing.
  static const PluginLibrary& open(const std::string& path);
  const abi::ProfilerTable* table(int interface) const;  // 5 or 6; nullptr when the library has none
  const HooksTable& hooks() const { return *hooks_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const abi::ProfilerTable* v5_ = nullptr;
  const abi::ProfilerTable* v6_ = nullptr;
  const HooksTable* hooks_ = nullptr;
};

// Where the plugin of this build is (a compile-time path, or PPSPEC_NCCL_PROFILER).
std::string built_plugin_path();

// NCCL's names of ppspec's kinds (ncclFuncToString, ncclDatatypeToString of 2.28).
const char* nccl_func_name(core::OpKind k);
const char* nccl_datatype_name(core::Dtype d);

// One simulated job's calls into the plugin. One at a time per process (the plugin is one per
// process, as in a real job).
class SimAdapter final : public sim::NcclObserver {
 public:
  // Records into `dir` (begin_job) through interface `interface` (5 or 6). `flushed`, if set, is
  // called after every flush: the lines a watcher reads are in the files then.
  SimAdapter(const PluginLibrary& lib, int interface, const std::string& dir,
             std::function<void(core::Time)> flushed = {});
  ~SimAdapter() override;
  SimAdapter(const SimAdapter&) = delete;
  SimAdapter& operator=(const SimAdapter&) = delete;

  // The operations the plugin was told of as posted: calls outside a capture, and replays' tasks.
  uint64_t posted() const { return posted_; }

  // The job is over: every communicator finalised, every trace given its trailer. The simulator
  // halts a run at its first mismatched pairing, which for a grouped send or recv is at the call,
  // while NCCL would go on: with `halted`, every group still open (a thread stopped before its
  // ncclGroupEnd, or inside it or inside an ungrouped call connecting to that thread) has the end
  // NCCL would have reached, and its calls' tasks are built.
  void finish(bool halted = false);

  void comm_initialised(core::Time t, core::RankId rank, std::string_view comm, int comm_rank, int comm_size) override;
  void called(core::Time t, const sim::ObservedCall& call) override;
  void task_built(core::Time t, const sim::ObservedCall& call) override;
  void group_ended(core::Time t, const void* host) override;
  void kernel_started(core::Time t, int64_t op_id) override;
  void kernel_completed(core::Time t, int64_t op_id) override;

 private:
  struct Task {
    void* context = nullptr;
    void* handle = nullptr;
    int channels = 0;            // 0: NCCL tells no kernel channel of it (a send to oneself, its receive)
    std::vector<void*> running;  // its KernelCh handles, once started
  };
  void* context(core::RankId rank, std::string_view comm) const;
  void* start(void* context, abi::EventDescr& d);
  void* group(const sim::ObservedCall& call);
  void call_api(const sim::ObservedCall& call, void* ctx, const char* func, int64_t count, void* parent,
                std::vector<void*>& handles);
  void build_task(const sim::ObservedCall& call, void* ctx, void* api_handle, const char* func, int peer,
                  std::vector<Task>& tasks);
  void flushed(core::Time t);
  static void set_time(core::Time t);  // what the plugin's clock reads until the next call

  const PluginLibrary& lib_;
  const abi::ProfilerTable& table_;
  std::function<void(core::Time)> on_flush_;
  std::map<std::pair<core::RankId, std::string>, void*, std::less<>> contexts_;
  // A thread's open group: its GroupApi handle, its calls (owning what their views name: the
  // simulated runtime may be gone by finish()).
  using OwnedCall = std::pair<sim::ObservedCall, std::pair<std::string, std::string>>;  // (call, (comm, origin))
  struct OpenGroup {
    void* handle = nullptr;
    std::vector<OwnedCall> calls;     // outside a capture
    std::vector<OwnedCall> captured;  // under capture
  };
  void build_at_capture(core::Time t, std::vector<OwnedCall>& captured);
  void end_halted_groups(core::Time t);
  std::map<const void*, OpenGroup> groups_;             // by host thread
  std::map<int64_t, std::vector<void*>> api_;           // posted op -> its API handles (an all_to_all has 2 per member)
  std::map<int64_t, std::vector<void*>> captured_;      // capture -> its API handles
  std::map<int64_t, std::vector<Task>> tasks_;          // posted op -> its tasks
  std::map<std::pair<void*, int>, uint64_t> coll_seq_;  // (context, func) -> NCCL's per-function sequence number
  std::set<int64_t> built_at_capture_;                  // captures whose task NCCL built once, not at each replay
  uint64_t posted_ = 0;
  bool finished_ = false;
};

}  // namespace ppspec::nccl_profiler
