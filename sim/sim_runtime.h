// The simulated implementation of the runtime interface: one World, one SimDevice per rank, the
// communicator system, host channels. `run()` returns the verdict with its findings.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/runtime.h"
#include "sim/comm_system.h"
#include "sim/config.h"
#include "sim/device.h"
#include "sim/host_channel.h"
#include "sim/nccl_observer.h"
#include "sim/policy.h"
#include "sim/race_detector.h"
#include "sim/world.h"

namespace ppspec::sim {

// Per-actor runtime state, as CUDA and NCCL keep per-thread state.
struct HostState {
  int group_depth = 0;
  int64_t group_id = -1;  // the open group's number (per host thread, from 0); -1 outside a group
  int64_t groups_opened = 0;
  std::vector<PartSpec> pending;  // operations of the open group
  std::vector<PartSpec> scratch;  // operations being launched by this actor (reused storage)
  std::vector<std::pair<core::RankId, uint64_t>> group_issue;  // issue index of the open group per rank
  std::string_view call_site;                                  // where the program is, for reports
  int64_t call_step = -1;                                      // the engine step it executes (-1: none)
};

class SimRuntime final : public core::Runtime {
 public:
  SimRuntime(int num_ranks, const SimConfig& config, std::unique_ptr<SchedulePolicy> policy, uint64_t seed);
  ~SimRuntime() override;

  int num_ranks() const override { return static_cast<int>(devices_.size()); }
  core::Device& device(core::RankId r) override { return device_impl(r); }
  void declare_comm(std::string_view name, std::span<const core::RankId> members) override;
  core::Communicator& comm_init(std::string_view name, core::RankId me) override;
  void group_start() override;
  void group_end() override;
  core::HostChannel& channel(std::string_view name) override;
  void spawn(core::ActorSpec spec, std::function<void()> body) override;
  void sleep(core::Time d) override;
  core::Time now() const override { return world_.now(); }
  core::EventBus& events() override { return bus_; }
  core::RunResult run() override;

  void set_call_site(std::string_view where, int64_t engine_step) override {
    HostState& h = host_state();
    h.call_site = where;
    h.call_step = engine_step;
  }

  // What NCCL's profiler interface would be told (sim/nccl_observer.h); null: nobody listens.
  void set_nccl_observer(NcclObserver* o) { nccl_observer_ = o; }
  NcclObserver* nccl_observer() const { return nccl_observer_; }

  World& world() { return world_; }
  const World& world() const { return world_; }
  CommSystem& comms() { return comms_; }
  const CommSystem& comms() const { return comms_; }
  // Inline: every runtime call and kernel looks its device up.
  SimDevice& device_impl(core::RankId r) const {
    if (r < 0 || static_cast<size_t>(r) >= devices_.size()) [[unlikely]]
      core::throw_formatted<std::invalid_argument>("no rank {} (the runtime has {})", r, devices_.size());
    return *devices_[static_cast<size_t>(r)];
  }
  const std::vector<std::unique_ptr<SimDevice>>& devices() const { return devices_; }
  HostState& host_state();
  // The race detector, when the configuration turns it on; null otherwise.
  RaceDetector* races() { return races_.get(); }
  // Accounts `bytes` of host memory for a backed buffer; throws core::CapacityError past the
  // budget (before allocating, so a run that cannot fit is refused instead of dying of bad_alloc).
  void take_memory(size_t bytes, core::RankId rank, std::string_view what);
  const std::map<std::string, std::unique_ptr<SimHostChannel>, std::less<>>& channels() const { return channels_; }

 private:
  core::EventBus bus_;
  World world_;
  CommSystem comms_;
  std::vector<std::unique_ptr<SimDevice>> devices_;
  std::unique_ptr<RaceDetector> races_;
  std::deque<HostState> hosts_;
  std::map<std::string, std::unique_ptr<SimHostChannel>, std::less<>> channels_;
  void watch_blocking_calls();  // decides, before the run, which threads keep clocks
  void note_stuck_hazards(WaitGraph& graph);
  void settle_open_mismatches(bool report);

  NcclObserver* nccl_observer_ = nullptr;
  bool ran_ = false;
  size_t memory_taken_ = 0;
};

}  // namespace ppspec::sim
