// The real implementation of the runtime interface (DESIGN §4): one std::thread per actor, CUDA
// devices, NCCL communicators, and a watchdog that turns a hang into a per-rank dump and ends the
// process promptly instead of a 10-minute NCCL timeout.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/runtime.h"
#include "real_backend/op_tracker.h"
#include "real_backend/step_profiler.h"

namespace ppspec::real {

class RealDevice;
class RealCommunicator;

struct RealConfig {
  // Lazy vs eager is CUDA_MODULE_LOADING, fixed when CUDA initialises (the CLI sets it for its
  // child process); jit compiles kernels with NVRTC at first use and loads them with cuModuleLoadData.
  core::ModuleLoading module_loading = core::ModuleLoading::lazy;
  core::Time hang_timeout = 20 * core::kSec;
  // Called by the watchdog on a hang with the dump (op_pending, actor_blocked events, already
  // published); the process then ends with _exit(0) without waiting for the GPUs.
  std::function<void(const std::vector<core::Event>& dump)> on_hang;
  // Called when an actor throws (a CUDA or NCCL error); the process then ends with _exit(3).
  std::function<void(const std::string& error)> on_error;
  // Called when the program earned a verdict by an error (NCCL's ncclInvalidUsage: invalid-usage; a
  // kernel's fault: device-fault); the finding says which thread and scenario line. The process
  // then ends with _exit(0).
  std::function<void(const core::Finding& finding)> on_verdict;
  // Per-step timing with CUDA events (step_profiler.h), per engine step as the engine's call sites
  // name it.
  bool profile = false;
};

// What each host thread is doing, for the hang dump.
struct ActorState {
  std::string name;
  core::RankId rank = -1;
  bool running = false;
  std::string call;  // the runtime call it is inside, empty when none
  core::Time call_since = 0;
};

// The scenario needs more GPUs than this machine has: bad input for this machine, not a failure.
class TooFewGpus : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RealRuntime final : public core::Runtime {
 public:
  // Throws TooFewGpus when this machine has fewer GPUs than ranks.
  RealRuntime(int num_ranks, RealConfig config);
  ~RealRuntime() override;

  int num_ranks() const override { return static_cast<int>(devices_.size()); }
  core::Device& device(core::RankId r) override;
  void declare_comm(std::string_view name, std::span<const core::RankId> members) override;
  core::Communicator& comm_init(std::string_view name, core::RankId me) override;
  void group_start() override;
  void group_end() override;
  core::HostChannel& channel(std::string_view name) override;
  void spawn(core::ActorSpec spec, std::function<void()> body) override;
  void sleep(core::Time d) override;
  core::Time now() const override;
  core::EventBus& events() override { return bus_; }
  void set_call_site(std::string_view where, int64_t engine_step) override;
  core::RunResult run() override;

  // ---- backend internals ----
  const RealConfig& config() const { return config_; }
  RealDevice& device_impl(core::RankId r);
  OpTracker& tracker() { return tracker_; }
  StepProfiler& profiler() { return profiler_; }
  // The engine step the calling thread runs (from its call site), or -1.
  int64_t current_step() const;
  // The calling thread waits for its next command: the host time of its step ends here.
  void end_host_step();
  void publish(core::Event& e) override;  // thread-safe
  void progress();                        // something completed: the watchdog's clock restarts
  // An error off the actors' threads (a host function): reported as an actor's would be, then _exit(3).
  [[noreturn]] void fail(const std::string& error);
  [[noreturn]] void end_with(const ActorState& actor, core::Verdict verdict, core::FindingKind kind,
                             const std::string& summary);
  std::string_view call_site() const;

  // RAII: the calling actor is inside `what` (shown in the hang dump); its end is progress.
  class CallScope {
   public:
    CallScope(RealRuntime& rt, std::string what);
    ~CallScope();
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    RealRuntime& rt_;
  };

  // Operations posted inside the calling thread's open NCCL group, completed at group_end.
  struct GroupState {
    int depth = 0;
    int64_t id = -1;  // the open group's number on this thread; -1 outside a group
    int64_t opened = 0;
    std::vector<std::pair<TrackedOp*, void*>> ops;  // with their cudaStream_t
    std::vector<std::pair<void*, void*>> timed;     // profiling: per stream, the group's start event
    bool captured = false;                          // one of the group's operations is captured
  };
  GroupState& group_state();

 private:
  void watchdog();
  [[noreturn]] void hang();

  RealConfig config_;
  std::chrono::steady_clock::time_point start_;
  core::EventBus bus_;
  std::mutex bus_mu_;
  OpTracker tracker_;
  StepProfiler profiler_;
  std::vector<std::unique_ptr<RealDevice>> devices_;

  struct CommGroup {
    std::vector<core::RankId> members;
    std::array<char, 128> unique_id{};
    std::vector<std::unique_ptr<RealCommunicator>> handles;  // by comm rank, made by comm_init
  };
  std::map<std::string, CommGroup, std::less<>> comms_;
  std::mutex comms_mu_;

  struct Actor {
    core::ActorSpec spec;
    std::function<void()> body;
    ActorState state;
  };
  std::deque<Actor> actors_;
  mutable std::mutex actors_mu_;
  std::vector<std::thread> threads_;

  class Channel;
  std::map<std::string, std::unique_ptr<Channel>, std::less<>> channels_;
  std::mutex channels_mu_;

  std::mutex fail_mu_;
  std::atomic<int64_t> last_progress_{0};
  std::atomic<bool> stop_watchdog_{false};
  std::thread watchdog_;
  std::deque<std::string> dump_strings_;
};

}  // namespace ppspec::real
