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
#include "sim/graph.h"
#include "sim/stream.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimRuntime;
class CommSystem;
struct CommKernel;

struct SimEvent {
  std::string name;
  const SimStream* stream = nullptr;  // where it was last recorded
  uint64_t target = 0;                // the position the stream must complete
  std::string_view origin{};          // where it was last recorded, for reports
};

// A device word a persistent kernel polls; set once by set_flag.
struct SimFlag {
  std::string name;
  bool set = false;
  WaitList waiters;
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
  void launch(core::Stream s, const core::KernelLaunch& k) override;
  void preload(core::KernelRef k, std::function<void()> device_load = {}) override;
  void memcpy(core::Stream s, const core::Buffer& dst, const core::Buffer& src) override;
  void memset(core::Stream s, const core::Buffer& dst, uint8_t value) override;
  void upload(core::Stream s, const core::Buffer& dst, std::vector<uint8_t> bytes) override;
  void download(core::Stream s, void* dst, const core::Buffer& src) override;
  void host_func(core::Stream s, std::function<void()> fn) override;
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
  World& world() const;
  CommSystem& comms() const;
  SimStream& stream_impl(core::Stream s) const;
  const std::vector<std::unique_ptr<SimStream>>& streams() const { return streams_; }
  const SimEvent& event_impl(core::DeviceEvent e) const { return events_.at(static_cast<size_t>(e.id)); }

  void enter();  // a host call begins: wait for the context lock
  void leave();  // a host call ends: its cost in virtual time

  // Communication kernels issued on this device (R7 serial order, R8 in-flight checks).
  uint64_t comm_issued = 0;
  uint64_t comm_completed = 0;
  std::deque<CommKernel*> comm_live;
  WaitList comm_order_waiters;

  Fiber* lock_holder() const { return lock_holder_; }
  const std::string& loading() const { return loading_; }
  bool module_loaded(std::string_view key) const { return loaded_.count(std::string(key)) > 0; }
  SimFlag& flag(std::string_view name);
  // A persistent kernel of this device spins on a flag that no queued set_flag will set.
  const SimStream* stream_awaiting_unqueued_flag() const;

 private:
  void ensure_loaded(core::KernelRef k, bool preload);
  // Copies and sets are built into the driver: enqueued without a module to load.
  void enqueue_builtin(SimStream& st, std::string_view name, std::function<void()> body);
  void drain(const WaitInfo& info);
  void hazard_if_comm_in_flight(std::string_view kind, std::string_view action);
  // Stops the run with `invalid-usage` when a stream of this device is being captured: any stream
  // for a capture-unsafe call (global capture mode), or `only` for a call that conflicts with it.
  void reject_during_capture(std::string_view call, const SimStream* only);

  SimRuntime& rt_;
  core::RankId rank_;
  std::vector<std::unique_ptr<SimStream>> streams_;
  std::deque<SimEvent> events_;  // a deque: reports hold views of event names
  std::deque<SimFlag> flags_;
  std::set<std::string> loaded_;
  std::set<std::string> hazards_noted_;
  Fiber* lock_holder_ = nullptr;
  std::string loading_;
  WaitList lock_waiters_;
  std::deque<std::vector<uint8_t>> memory_;  // data and shadow of every allocation
  std::vector<std::unique_ptr<GraphRec>> graphs_;
};

}  // namespace ppspec::sim
