// A simulated GPU: streams, events, memory with shadow bits, module loading and the context lock
// (R8), graph capture (R9, R10). Host calls go through enter()/leave(): the context lock first,
// then the call's cost in virtual time, which makes every call an interleaving point.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/runtime.h"
#include "sim/blocking_hazards.h"
#include "sim/graph.h"
#include "sim/stream.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimRuntime;
class RaceDetector;
class CommSystem;
struct CommKernel;

struct SimEvent {
  std::string name;
  const SimStream* stream = nullptr;         // where it was last recorded
  uint64_t target = 0;                       // the position the stream must complete
  std::shared_ptr<const VectorClock> clock;  // the stream's clock at `target` (when clocks are on)
  std::string_view origin{};                 // where it was last recorded, for reports
};

// A device word a persistent kernel polls; set once by set_flag.
struct SimFlag {
  std::string name;
  bool set = false;
  WaitList waiters;
  VectorClock clock;  // the set_flag's, once set
};

class SimDevice final : public core::Device {
 public:
  SimDevice(SimRuntime& rt, core::RankId rank);
  ~SimDevice() override;

  // core::Device
  core::RankId rank() const override { return rank_; }
  core::ModuleLoading module_loading() const override;
  core::Stream stream(std::string_view name) override;
  std::string_view stream_name(core::Stream s) const override;
  core::Buffer alloc(core::Dtype dtype, core::Shape shape, std::string_view name) override;
  // Where the calling host thread is (its call site), or empty outside a host thread.
  std::string_view caller_site() const;
  RaceDetector* races() const;
  void launch(core::Stream s, const core::KernelLaunch& k) override;
  void preload(core::KernelRef k, std::function<void()> device_load = {}) override;
  void memcpy(core::Stream s, const core::Buffer& dst, const core::Buffer& src) override;
  void memset(core::Stream s, const core::Buffer& dst, uint8_t value) override;
  void upload(core::Stream s, const core::Buffer& dst, std::vector<uint8_t> bytes) override;
  void download(core::Stream s, void* dst, const core::Buffer& src) override;
  void host_func(core::Stream s, std::function<void()> fn) override;
  core::Buffer alloc_host(core::Dtype dtype, core::Shape shape, std::string_view name) override;
  void copy_to_host(core::Stream s, const core::Buffer& host_dst, const core::Buffer& src) override;
  void copy_to_device(core::Stream s, const core::Buffer& dst, const core::Buffer& host_src) override;
  void host_access(const core::Buffer& pinned, bool write) override;
  void wait_flag(core::Stream s, std::string_view flag) override;
  void set_flag(core::Stream s, std::string_view flag) override;
  core::DeviceEvent event(std::string_view name) override;
  void record(core::DeviceEvent e, core::Stream s) override;
  void stream_wait(core::Stream s, core::DeviceEvent e) override;
  void event_sync(core::DeviceEvent e) override;
  void stream_sync(core::Stream s) override;
  void device_sync() override;
  void capture_begin(core::Stream s) override;
  core::Graph capture_end(core::Stream s) override;
  void graph_launch(core::Graph g, core::Stream s) override;

  // ---- simulator internals ----
  World& world() const { return world_; }  // inline: asked on every runtime call
  CommSystem& comms() const;
  SimStream& stream_impl(core::Stream s) const;
  const std::vector<std::unique_ptr<SimStream>>& streams() const { return streams_; }
  const SimEvent& event_impl(core::DeviceEvent e) const { return events_.at(static_cast<size_t>(e.id)); }

  void enter();  // a host call begins: wait for the context lock (begin_call, then wait_for_lock)
  void leave();  // a host call ends: its cost in virtual time

  // Communication kernels issued on this device (R7 serial order, R8 in-flight checks).
  uint64_t comm_issued = 0;
  uint64_t comm_completed = 0;
  std::deque<CommKernel*> comm_live;
  WaitList comm_order_waiters;

  VectorClock comm_done_clock;  // the last completed communication kernel's (R7 serial order)

  Fiber* lock_holder() const { return lock_holder_; }
  const std::string& loading() const { return loading_; }
  bool module_loaded(std::string_view key) const { return loaded_.count(std::string(key)) > 0; }
  SimFlag& flag(std::string_view name);

  // R8 hazards (sim/blocking_hazards.h). Ranks with several host threads watch their waiting
  // items' releases; every rank notes a blocking call that a deadlock leaves on a wait-for cycle.
  BlockingHazards& blocking() { return blocking_; }
  void watch_blocking(std::vector<const Fiber*> hosts);
  void on_wait_flag_issued(const WorkItem& item, const SimStream& st);
  void on_flag_set(const SimFlag& flag);
  // At the end of a deadlocked run, `host` stuck in a blocking call of this device: a hazard if
  // the work its drain waits for waits, through the wait-for graph, for the call itself.
  void note_if_stuck_in_call(const Fiber& host, WaitGraph& graph);

 private:
  void ensure_loaded(core::KernelRef k, bool preload);
  // Memory with its shadow, taken from the run's budget (device memory, or pinned host memory).
  core::Buffer backed_memory(core::Dtype dtype, core::Shape shape, std::string_view name, bool pinned);
  // Whether `b` lies in one pinned host allocation; `what` names the call for the error.
  void require_pinned(const core::Buffer& b, bool pinned, std::string_view what) const;
  void begin_call();
  void wait_for_lock();
  // Copies and sets are built into the driver: enqueued without a module to load.
  void enqueue_builtin(SimStream& st, std::string_view name, std::function<void()> body);
  // Waits for everything enqueued on the device so far; the caller learns what it waited for.
  void drain(const WaitInfo& info);
  void note_hazard(const BlockingHazard& h);
  // Stops the run with `invalid-usage` when a stream of this device is being captured: any stream
  // for a capture-unsafe call (global capture mode), or `only` for a call that conflicts with it.
  void reject_during_capture(std::string_view call, const SimStream* only);

  SimRuntime& rt_;
  World& world_;  // rt_'s, which outlives the device
  core::RankId rank_;
  std::vector<std::unique_ptr<SimStream>> streams_;
  std::deque<SimEvent> events_;  // a deque: reports hold views of event names
  std::deque<SimFlag> flags_;
  std::set<std::string> loaded_;
  std::set<std::string> hazards_noted_;
  Fiber* lock_holder_ = nullptr;
  std::string loading_;
  bool loading_preload_ = false;
  WaitList lock_waiters_;
  BlockingHazards blocking_;
  std::deque<std::vector<uint8_t>> memory_;  // data and shadow of every allocation
  // Pinned host allocations (alloc_host), as [first, last) byte ranges: only looked up, never iterated
  // into anything reported. Bounded: the engine makes one or two per rank.
  static constexpr size_t kPinnedMax = 256;
  std::vector<std::pair<const uint8_t*, const uint8_t*>> pinned_;
  std::vector<std::unique_ptr<GraphRec>> graphs_;
};

}  // namespace ppspec::sim
