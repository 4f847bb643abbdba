#include "real_backend/real_runtime.h"

#include "core/finding_kinds.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "real_backend/cuda_check.h"
#include "real_backend/real_communicator.h"
#include "real_backend/real_device.h"

namespace ppspec::real {
namespace {

thread_local ActorState* t_actor = nullptr;
thread_local std::string t_call_site;
thread_local RealRuntime::GroupState t_group;
thread_local int64_t t_step = -1;
thread_local core::Time t_step_start = 0;

}  // namespace

// ---- host channel ----------------------------------------------------------------------------

class RealRuntime::Channel final : public core::HostChannel {
 public:
  Channel(RealRuntime& rt, std::string name) : rt_(rt), name_(std::move(name)) {}
  void send(std::any message) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(message));
    }
    cv_.notify_all();
  }
  std::any recv() override {
    rt_.end_host_step();
    CallScope scope(rt_, fmt::format("channel recv('{}')", name_));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty(); });
    std::any m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }

 private:
  RealRuntime& rt_;
  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::any> queue_;
};

// ---- construction ----------------------------------------------------------------------------

RealRuntime::RealRuntime(int num_ranks, RealConfig config)
    : config_(std::move(config)),
      start_(std::chrono::steady_clock::now()),
      tracker_(*this, num_ranks),
      profiler_(config_.profile) {
  int gpus = 0;
  const cudaError_t e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess) gpus = 0;
  if (gpus < num_ranks)
    throw TooFewGpus(fmt::format("the scenario has {} ranks and needs one GPU per rank; this machine has {}{}",
                                 num_ranks, gpus,
                                 e != cudaSuccess ? fmt::format(" (CUDA: {})", cudaGetErrorString(e)) : ""));
  for (int r = 0; r < num_ranks; ++r) devices_.push_back(std::make_unique<RealDevice>(*this, r));
}

RealRuntime::~RealRuntime() {
  stop_watchdog_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  tracker_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  for (auto& [name, g] : comms_)
    for (auto& h : g.handles) h.reset();
  devices_.clear();
}

core::Device& RealRuntime::device(core::RankId r) { return device_impl(r); }

RealDevice& RealRuntime::device_impl(core::RankId r) {
  if (r < 0 || static_cast<size_t>(r) >= devices_.size())
    throw std::invalid_argument(fmt::format("no rank {} (the runtime has {})", r, devices_.size()));
  return *devices_[static_cast<size_t>(r)];
}

core::Time RealRuntime::now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
}

void RealRuntime::publish(core::Event& e) {
  std::lock_guard<std::mutex> lock(bus_mu_);
  if (bus_.active()) bus_.publish(e);
}

void RealRuntime::progress() { last_progress_ = now(); }

void RealRuntime::set_call_site(std::string_view where, int64_t engine_step) {
  t_call_site = std::string(where);
  if (!profiler_.on() || engine_step < 0) return;
  t_step = engine_step;
  t_step_start = now();
}

int64_t RealRuntime::current_step() const { return t_step; }

void RealRuntime::end_host_step() {
  if (t_step < 0 || t_actor == nullptr) return;
  profiler_.host(t_actor->rank, t_step, now() - t_step_start);
  t_step = -1;
}
std::string_view RealRuntime::call_site() const { return t_call_site; }

RealRuntime::GroupState& RealRuntime::group_state() { return t_group; }

RealRuntime::CallScope::CallScope(RealRuntime& rt, std::string what) : rt_(rt) {
  if (t_actor == nullptr) return;
  std::lock_guard<std::mutex> lock(rt_.actors_mu_);
  t_actor->call = std::move(what);
  t_actor->call_since = rt_.now();
}

RealRuntime::CallScope::~CallScope() {
  if (t_actor != nullptr) {
    std::lock_guard<std::mutex> lock(rt_.actors_mu_);
    t_actor->call.clear();
  }
  rt_.progress();
}

// ---- communicators ---------------------------------------------------------------------------

void RealRuntime::declare_comm(std::string_view name, std::span<const core::RankId> members) {
  std::lock_guard<std::mutex> lock(comms_mu_);
  if (comms_.count(name)) throw std::invalid_argument(fmt::format("communicator '{}' declared twice", name));
  CommGroup g;
  g.members.assign(members.begin(), members.end());
  ncclUniqueId id;
  PPSPEC_NCCL(ncclGetUniqueId(&id));
  static_assert(sizeof(id) <= 128);
  std::memcpy(g.unique_id.data(), &id, sizeof(id));
  g.handles.resize(g.members.size());
  comms_.emplace(std::string(name), std::move(g));
}

core::Communicator& RealRuntime::comm_init(std::string_view name, core::RankId me) {
  CommGroup* g = nullptr;
  int crank = -1;
  ncclUniqueId id;
  {
    std::lock_guard<std::mutex> lock(comms_mu_);
    auto it = comms_.find(name);
    if (it == comms_.end()) throw std::invalid_argument(fmt::format("no communicator '{}'", name));
    g = &it->second;
    for (size_t i = 0; i < g->members.size(); ++i)
      if (g->members[i] == me) crank = static_cast<int>(i);
    std::memcpy(&id, g->unique_id.data(), sizeof(id));
  }
  if (crank < 0) throw std::invalid_argument(fmt::format("rank{} is not a member of '{}'", me, name));
  CallScope scope(*this, fmt::format("ncclCommInitRank('{}')", name));
  PPSPEC_CUDA(cudaSetDevice(me));
  ncclComm_t comm = nullptr;
  PPSPEC_NCCL(ncclCommInitRank(&comm, static_cast<int>(g->members.size()), id, crank));
  auto handle = std::make_unique<RealCommunicator>(*this, device_impl(me), std::string(name), g->members, crank, comm);
  RealCommunicator* raw = handle.get();
  {
    std::lock_guard<std::mutex> lock(comms_mu_);
    g->handles[static_cast<size_t>(crank)] = std::move(handle);
  }
  core::Event e;
  e.t = now();
  e.kind = core::EventKind::comm_init;
  e.rank = me;
  e.actor = t_actor != nullptr ? std::string_view(t_actor->name) : std::string_view();
  e.comm = name;
  e.value = static_cast<int64_t>(g->members.size());
  publish(e);
  return *raw;
}

void RealRuntime::group_start() {
  PPSPEC_NCCL(ncclGroupStart());
  if (t_group.depth++ == 0) t_group.id = t_group.opened++;
}

void RealRuntime::group_end() {
  if (t_group.depth == 0) throw std::logic_error("group_end without group_start");
  {
    CallScope scope(*this, "ncclGroupEnd");
    set_nccl_call_captured(t_group.captured);
    PPSPEC_NCCL(ncclGroupEnd());
  }
  if (--t_group.depth > 0) return;
  t_group.captured = false;
  t_group.id = -1;
  // Only now may stream operations follow the group's operations: one completion event per stream.
  std::vector<std::pair<TrackedOp*, void*>> ops;
  ops.swap(t_group.ops);
  struct ClearTimed {
    ~ClearTimed() { t_group.timed.clear(); }
  } clear_timed;
  std::vector<void*> streams;
  for (const auto& [op, s] : ops)
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  for (void* s : streams) {
    for (auto& [stream, start] : t_group.timed)
      if (stream == s)
        profiler_.end(t_actor != nullptr ? t_actor->rank : -1, t_step, s, StepPart::communication, start);
    auto done = std::make_shared<CompletionEvent>();
    cudaEvent_t ev;
    PPSPEC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    PPSPEC_CUDA(cudaEventRecord(ev, as_stream(s)));
    done->event = ev;
    std::vector<TrackedOp*> mine;
    for (const auto& [op, st] : ops)
      if (st == s) mine.push_back(op);
    tracker_.attach(mine, done);
  }
}

// ---- actors ----------------------------------------------------------------------------------

core::HostChannel& RealRuntime::channel(std::string_view name) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  auto it = channels_.find(name);
  if (it == channels_.end())
    it = channels_.emplace(std::string(name), std::make_unique<Channel>(*this, std::string(name))).first;
  return *it->second;
}

void RealRuntime::spawn(core::ActorSpec spec, std::function<void()> body) {
  if (spec.rank >= num_ranks())
    throw std::invalid_argument(fmt::format("actor {} names rank {}", spec.name, spec.rank));
  Actor& a = actors_.emplace_back();
  a.state.name = spec.name;
  a.state.rank = spec.rank;
  a.spec = std::move(spec);
  a.body = std::move(body);
}

void RealRuntime::sleep(core::Time d) {
  CallScope scope(*this, "sleep");
  std::this_thread::sleep_for(std::chrono::nanoseconds(d));
}

core::RunResult RealRuntime::run() {
  progress();
  tracker_.start();
  watchdog_ = std::thread([this] { watchdog(); });
  for (Actor& a : actors_) {
    {
      std::lock_guard<std::mutex> lock(actors_mu_);
      a.state.running = true;
    }
    threads_.emplace_back([this, &a] {
      t_actor = &a.state;
      try {
        if (a.spec.rank >= 0) PPSPEC_CUDA(cudaSetDevice(a.spec.rank));
        core::Event e;
        e.t = now();
        e.kind = core::EventKind::actor_start;
        e.rank = a.spec.rank;
        e.actor = a.state.name;
        publish(e);
        a.body();
        e.t = now();
        e.kind = core::EventKind::actor_end;
        publish(e);
      } catch (const NcclInvalidUsage& ex) {
        end_with(a.state, core::Verdict::invalid_usage, core::FindingKind::nccl_invalid_usage,
                 fmt::format("{}: NCCL rejected the call with ncclInvalidUsage: {}", a.state.name, ex.what()));
      } catch (const NcclCaptureError& ex) {
        end_with(a.state, core::Verdict::invalid_usage, core::FindingKind::connect_in_capture,
                 fmt::format("{}: NCCL failed a call captured into a CUDA graph (first contact inside a capture sets a "
                             "connection up, which the capture forbids): {}",
                             a.state.name, ex.what()));
      } catch (const DeviceFault& ex) {
        end_with(
            a.state, core::Verdict::device_fault, core::FindingKind::device_fault,
            fmt::format("{}: a kernel of this process faulted; CUDA reports it here: {}", a.state.name, ex.what()));
      } catch (const std::exception& ex) {
        fail(fmt::format("{}: {}", a.state.name, ex.what()));
      }
      std::lock_guard<std::mutex> lock(actors_mu_);
      a.state.running = false;
      progress();
    });
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Operations can still be in flight after every thread returned (an eager send nobody
  // received): wait for them, under the watchdog.
  while (!tracker_.idle()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop_watchdog_ = true;
  watchdog_.join();
  tracker_.stop();

  core::RunResult r;
  r.verdict = core::Verdict::pass;
  r.stats.sim_time = now();
  r.stats.ops_posted = tracker_.posted();
  {
    core::Event e;
    e.t = now();
    e.kind = core::EventKind::verdict;
    e.text = "pass";
    publish(e);
  }
  r.stats.events = bus_.published();
  return r;
}

void RealRuntime::fail(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(fail_mu_);  // one report, even when several threads fail
    if (config_.on_error) config_.on_error(error);
    std::fprintf(stderr, "ppspec: %s\n", error.c_str());
    std::fflush(stderr);
  }
  _exit(3);
}

void RealRuntime::end_with(const ActorState& actor, core::Verdict verdict, core::FindingKind kind,
                           const std::string& summary) {
  {
    std::lock_guard<std::mutex> lock(fail_mu_);  // one report, even when several threads end so
    core::Finding f;
    f.verdict = verdict;
    f.kind = kind;
    f.summary = summary;
    f.sites.push_back(core::Site{actor.rank, actor.name, "", -1, "the failing call", std::string(call_site())});
    if (config_.on_verdict) config_.on_verdict(f);
    std::fprintf(stderr, "ppspec: %s\n", f.summary.c_str());
    std::fflush(stderr);
  }
  _exit(0);
}

// ---- watchdog --------------------------------------------------------------------------------

void RealRuntime::watchdog() {
  while (!stop_watchdog_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (now() - last_progress_.load() > config_.hang_timeout) hang();
  }
}

void RealRuntime::hang() {
  const core::Time t = now();
  std::vector<core::Event> dump = tracker_.pending_events(t, dump_strings_);
  {
    std::lock_guard<std::mutex> lock(actors_mu_);
    for (const Actor& a : actors_) {
      if (!a.state.running) continue;
      core::Event e;
      e.t = t;
      e.kind = core::EventKind::actor_blocked;
      e.rank = a.state.rank;
      e.actor = dump_strings_.emplace_back(a.state.name);
      e.text = dump_strings_.emplace_back(a.state.call.empty() ? "host code (no runtime call)" : a.state.call);
      e.value = a.state.call.empty() ? 0 : t - a.state.call_since;
      dump.push_back(e);
    }
  }
  for (core::Event& e : dump) publish(e);
  core::Event v;
  v.t = t;
  v.kind = core::EventKind::verdict;
  v.text = "hang";
  v.value = config_.hang_timeout;
  publish(v);
  {
    // Hold the event bus: no thread may write to the trace while the dump is finished.
    std::lock_guard<std::mutex> lock(bus_mu_);
    if (config_.on_hang) config_.on_hang(dump);
  }
  std::fflush(nullptr);
  // Do not wait for the GPUs, the threads stuck in the driver, or NCCL's own teardown.
  _exit(0);
}

}  // namespace ppspec::real
