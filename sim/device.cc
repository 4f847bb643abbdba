#include "sim/device.h"

#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/hazard_kinds.h"
#include "sim/comm_system.h"
#include "sim/sim_runtime.h"

namespace ppspec::sim {

SimDevice::SimDevice(SimRuntime& rt, core::RankId rank) : rt_(rt), world_(rt.world()), rank_(rank) {}
SimDevice::~SimDevice() = default;

CommSystem& SimDevice::comms() const { return rt_.comms(); }
core::ModuleLoading SimDevice::module_loading() const { return rt_.world().config().module_loading; }

core::Stream SimDevice::stream(std::string_view name) {
  for (const auto& s : streams_)
    if (s->name() == name) return core::Stream{s->id()};
  const auto id = static_cast<int32_t>(streams_.size());
  streams_.push_back(std::make_unique<SimStream>(*this, id, std::string(name)));
  SimStream* s = streams_.back().get();
  Fiber& f = world().spawn(s->full_name(), FiberKind::stream, rank_, [s] { s->serve(); });
  f.stream = s;
  s->set_fiber(&f);
  return core::Stream{id};
}

std::string_view SimDevice::stream_name(core::Stream s) const { return stream_impl(s).name(); }

SimStream& SimDevice::stream_impl(core::Stream s) const {
  if (s.id < 0 || static_cast<size_t>(s.id) >= streams_.size()) [[unlikely]]
    core::throw_formatted<std::invalid_argument>("rank{}: no stream with id {}", rank_, s.id);
  return *streams_[static_cast<size_t>(s.id)];
}

void SimDevice::enter() {
  begin_call();
  wait_for_lock();
}

void SimDevice::begin_call() {
  // A runtime call: the thread's own clock component moves on, so that what it does from here on
  // is told from what came before (a module load's context lock may hold this call back, R8).
  Fiber& self = world().current();
  if (self.owns_component) self.clock.bump(self.id);
}

void SimDevice::wait_for_lock() {
  World& w = world();
  Fiber& self = w.current();
  while (lock_holder_ != nullptr && lock_holder_ != &self)
    lock_waiters_.wait(
        w, WaitInfo{.kind = WaitKind::context_lock, .what = "context lock", .device = this, .holder = lock_holder_});
}

void SimDevice::leave() {
  World& w = world();
  w.sleep(w.jittered(w.config().cost.host_call));
}

namespace {

core::FindingKind hazard_kind(BlockingKind k) {
  switch (k) {
    case BlockingKind::device_sync: return core::FindingKind::device_sync_in_flight;
    case BlockingKind::malloc: return core::FindingKind::malloc_in_flight;
    case BlockingKind::module_load: return core::FindingKind::module_load_in_flight;
  }
  PPSPEC_ASSERT(false, "a blocking call of no kind");
  return core::FindingKind::none;
}

}  // namespace

void SimDevice::note_hazard(const BlockingHazard& h) {
  const core::FindingKind kind = hazard_kind(h.kind);
  if (!hazards_noted_.insert(fmt::format("{}/{}", kind, h.action)).second) return;
  core::Finding f;
  f.verdict = core::Verdict::hazard;
  f.kind = kind;
  f.summary =
      fmt::format("rank{} {} while {} can be in flight on {}; the call waits for the device to drain (R8), and {}",
                  rank_, h.action, h.item, h.stream, h.why);
  f.sites.push_back(core::Site{rank_, h.actor, "", -1, h.action, h.origin});
  f.sites.push_back(core::Site{rank_, h.stream, "", -1, h.item, ""});
  if (world().bus().active()) {
    core::Event e = world().event(core::EventKind::note, rank_, h.actor);
    e.text = f.summary;
    world().bus().publish(e);
  }
  world().note(std::move(f));
}

void SimDevice::watch_blocking(std::vector<const Fiber*> hosts) {
  blocking_.activate(std::move(hosts), [this](const BlockingHazard& h) { note_hazard(h); });
}

void SimDevice::on_wait_flag_issued(const WorkItem& item, const SimStream& st) {
  if (!blocking_.active()) return;
  const int64_t id = blocking_.on_wait_issued(
      item.enqueue_clock(), fmt::format("a persistent kernel spinning until flag '{}' is set", item.flag->name),
      st.full_name(), nullptr, item.flag);
  if (item.flag->set) blocking_.on_released(id, item.flag->clock);
}

void SimDevice::on_flag_set(const SimFlag& flag) { blocking_.on_flag_set(&flag, flag.clock); }

void SimDevice::note_if_stuck_in_call(const Fiber& host, WaitGraph& graph) {
  PPSPEC_ASSERT(host.wait.kind == WaitKind::device_drain && host.wait.device == this,
                "{} is not blocked in a drain of rank{}", host.name, rank_);
  // The call is a hazard when the waits of the work its drain waits for lead back to the caller
  // (itself, or a thread waiting for its context lock: that wait leads to the caller too).
  const SimStream* through = nullptr;
  for (const auto& s : streams_) {
    if (s->idle() || !graph.behind(*s).leads_to(&host)) continue;
    through = s.get();
    break;
  }
  if (through == nullptr) return;
  BlockingHazard h;
  if (host.wait.drain == BlockingKind::module_load) {
    h.kind = BlockingKind::module_load;
    h.action = fmt::format("loads module {}{}", loading_, loading_preload_ ? " (preload)" : "");
  } else {
    h.kind = host.wait.drain;
    h.action = h.kind == BlockingKind::malloc ? "allocates device memory" : "synchronizes the device";
  }
  h.actor = host.name;
  h.origin = host.host != nullptr ? std::string(host.host->call_site) : "";
  const WorkItem& head = *through->head();
  h.item = head.type == WorkItem::Type::comm ? comms().describe_kernel(*head.comm)
           : head.type == WorkItem::Type::wait_flag
               ? fmt::format("a persistent kernel spinning until flag '{}' is set", head.flag->name)
               : std::string(head.name);
  h.stream = through->full_name();
  h.why = "that work waits, through what it needs, for this very call to return: it never does";
  note_hazard(h);
}

void SimDevice::drain(const WaitInfo& info) {
  // "All earlier work": what was enqueued before this call. The caller cannot enqueue meanwhile.
  std::vector<uint64_t> targets;
  std::vector<std::shared_ptr<const VectorClock>> clocks;
  targets.reserve(streams_.size());
  for (const auto& s : streams_) {
    targets.push_back(s->enqueued());
    if (world().clocks_on()) clocks.push_back(s->clock_at_end());
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    WaitInfo wi = info;
    wi.stream = streams_[i].get();
    streams_[i]->wait_completed(targets[i], wi);
  }
  if (VectorClock* mine = world().host_clock())
    for (const auto& c : clocks) mine->join(*c);
}

void SimDevice::ensure_loaded(core::KernelRef k, bool preload) {
  World& w = world();
  const auto mode = module_loading();
  if (mode == core::ModuleLoading::eager) return;  // every module loaded at init
  std::string key = fmt::format("{}[{}]", k.name, k.spec);
  if (loaded_.count(key)) return;
  if (mode == core::ModuleLoading::jit) w.sleep(w.jittered(w.config().cost.jit_compile));  // host-only
  // R8: the load takes the context lock, then waits for every earlier kernel on the device. It
  // is a blocking call from its start (sim/blocking_hazards.h): a load that waits for the lock
  // behind another load in this schedule takes it first in another.
  begin_call();
  blocking_.on_call(w.current(), BlockingKind::module_load,
                    fmt::format("loads module {}{}", key, preload ? " (preload)" : ""),
                    std::string(rt_.host_state().call_site));
  wait_for_lock();
  if (loaded_.count(key)) return;  // another thread of this device loaded it meanwhile
  lock_holder_ = &w.current();
  loading_ = key;
  loading_preload_ = preload;
  drain(WaitInfo{
      .kind = WaitKind::device_drain, .what = "module load", .drain = BlockingKind::module_load, .device = this});
  w.sleep(w.jittered(w.config().cost.module_load));
  loaded_.insert(key);
  if (w.bus().active()) {
    core::Event e = w.event(core::EventKind::module_load, rank_, w.current().name);
    e.kernel = k.name;
    e.spec = k.spec;
    e.text = rt_.host_state().call_site;  // where the host was, for the report
    e.step = rt_.host_state().call_step;
    e.value = mode == core::ModuleLoading::jit ? 1 : 0;
    w.bus().publish(e);
  }
  lock_holder_ = nullptr;
  loading_.clear();
  lock_waiters_.wake_all(w);
}

core::Buffer SimDevice::alloc(core::Dtype dtype, core::Shape shape, std::string_view name) {
  World& w = world();
  if (w.in_fiber() && w.current().kind == FiberKind::host) {
    // cudaMalloc from a running thread: an implicit device synchronisation (R8).
    enter();
    reject_during_capture("cudaMalloc", nullptr);
    blocking_.on_call(w.current(), BlockingKind::malloc, "allocates device memory",
                      std::string(rt_.host_state().call_site));
    drain(WaitInfo{.kind = WaitKind::device_drain, .what = "malloc", .drain = BlockingKind::malloc, .device = this});
    leave();
  }
  return backed_memory(dtype, shape, name, false);
}

core::Buffer SimDevice::backed_memory(core::Dtype dtype, core::Shape shape, std::string_view name, bool pinned) {
  constexpr int64_t kElementsMax = int64_t{1} << 48;
  PPSPEC_ASSERT(shape.rows >= 0 && shape.cols >= 1 && shape.rows <= kElementsMax / shape.cols, "a buffer of {} x {}",
                shape.rows, shape.cols);
  if (!world().config().backed_memory) return core::Buffer(nullptr, nullptr, dtype, shape);
  const size_t bytes = static_cast<size_t>(shape.count()) * core::dtype_size(dtype);
  rt_.take_memory(2 * bytes, rank_, name);  // data and shadow
  std::vector<uint8_t>& data = memory_.emplace_back(bytes, 0);
  std::vector<uint8_t>& shadow = memory_.emplace_back(bytes, 0);
  const core::Buffer b(data.data(), shadow.data(), dtype, shape);
  if (pinned) {
    PPSPEC_ASSERT(pinned_.size() < kPinnedMax, "rank{} allocates more than {} pinned host buffers", rank_, kPinnedMax);
    pinned_.emplace_back(data.data(), data.data() + bytes);
  }
  if (RaceDetector* races = rt_.races()) races->on_alloc(rank_, b, name, pinned);
  return b;
}

std::string_view SimDevice::caller_site() const {
  const World& w = rt_.world();
  return w.in_fiber() && w.current().host != nullptr ? w.current().host->call_site : std::string_view{};
}

RaceDetector* SimDevice::races() const { return rt_.races(); }

void SimDevice::launch(core::Stream s, const core::KernelLaunch& k) {
  World& w = world();
  SimStream& st = stream_impl(s);
  ensure_loaded(k.kernel, false);
  enter();
  WorkItem item;
  item.type = WorkItem::Type::kernel;
  item.name = k.kernel.name;
  item.spec = k.kernel.spec;
  const CostModel& c = w.config().cost;
  item.duration = k.duration >= 0 ? k.duration : c.kernel + (k.work / 1024) * c.kernel_per_kwork;
  item.body = k.body;
  item.engine_step = w.in_fiber() && w.current().host != nullptr ? w.current().host->call_step : -1;
  if (w.bus().active()) {
    core::Event e = w.event(core::EventKind::kernel_launched, rank_, w.current().name);
    e.kernel = k.kernel.name;
    e.spec = k.kernel.spec;
    e.text = st.name();
    w.bus().publish(e);
  }
  if (GraphRec* g = st.capture()) {
    g->items.push_back(GraphItem{false, std::move(item), {}});
  } else {
    st.enqueue(std::move(item));
  }
  leave();
}

void SimDevice::preload(core::KernelRef k, std::function<void()> device_load) {
  (void)device_load;  // the simulator loads modules by name
  ensure_loaded(k, true);
  enter();
  leave();
}

void SimDevice::enqueue_builtin(SimStream& st, std::string_view name, std::function<void()> body) {
  enter();
  WorkItem item;
  item.type = WorkItem::Type::kernel;
  item.name = name;
  item.duration = world().config().cost.memcpy;
  item.body = std::move(body);
  if (GraphRec* g = st.capture())
    g->items.push_back(GraphItem{false, std::move(item), {}});
  else
    st.enqueue(std::move(item));
  leave();
}

void SimDevice::memcpy(core::Stream s, const core::Buffer& dst, const core::Buffer& src) {
  if (dst.bytes() != src.bytes())
    throw std::invalid_argument(
        fmt::format("rank{}: memcpy of {} bytes into {} bytes", rank_, src.bytes(), dst.bytes()));
  enqueue_builtin(stream_impl(s), "memcpy", [dst, src] {
    if (src.bytes() == 0 || !dst.backed() || !src.backed()) return;
    kernels::note_access(src.data(), src.bytes(), false);
    kernels::note_access(dst.data(), src.bytes(), true);
    std::memcpy(dst.data(), src.data(), src.bytes());
    if (dst.shadow() != nullptr) {
      if (src.shadow() != nullptr)
        std::memcpy(dst.shadow(), src.shadow(), src.bytes());
      else
        std::memset(dst.shadow(), 1, src.bytes());
    }
  });
}

void SimDevice::memset(core::Stream s, const core::Buffer& dst, uint8_t value) {
  enqueue_builtin(stream_impl(s), "memset", [dst, value] {
    if (dst.bytes() == 0 || !dst.backed()) return;
    kernels::note_access(dst.data(), dst.bytes(), true);
    std::memset(dst.data(), value, dst.bytes());
    dst.mark_all_written();
  });
}

void SimDevice::upload(core::Stream s, const core::Buffer& dst, std::vector<uint8_t> bytes) {
  if (bytes.size() > dst.bytes())
    throw std::invalid_argument(
        fmt::format("rank{}: upload of {} bytes into {} bytes", rank_, bytes.size(), dst.bytes()));
  enqueue_builtin(stream_impl(s), "memcpy_h2d", [dst, data = std::move(bytes)] {
    if (data.empty() || !dst.backed()) return;
    kernels::note_access(dst.data(), data.size(), true);
    std::memcpy(dst.data(), data.data(), data.size());
    if (dst.shadow() != nullptr) std::memset(dst.shadow(), 1, data.size());
  });
}

void SimDevice::download(core::Stream s, void* dst, const core::Buffer& src) {
  enqueue_builtin(stream_impl(s), "memcpy_d2h", [dst, src] {
    if (src.bytes() == 0 || !src.backed()) return;
    kernels::note_access(src.data(), src.bytes(), false);
    std::memcpy(dst, src.data(), src.bytes());
  });
}

void SimDevice::host_func(core::Stream s, std::function<void()> fn) {
  // A host node in a captured graph runs at every replay, as in CUDA.
  enqueue_builtin(stream_impl(s), "host_func", std::move(fn));
}

SimFlag& SimDevice::flag(std::string_view name) {
  for (SimFlag& f : flags_)
    if (f.name == name) return f;
  flags_.emplace_back().name = std::string(name);
  return flags_.back();
}

void SimDevice::wait_flag(core::Stream s, std::string_view name) {
  SimStream& st = stream_impl(s);
  enter();
  WorkItem item;
  item.type = WorkItem::Type::wait_flag;
  item.name = "wait_flag";
  item.flag = &flag(name);
  if (GraphRec* g = st.capture())
    g->items.push_back(GraphItem{false, std::move(item), {}});
  else
    st.enqueue(std::move(item));
  leave();
}

void SimDevice::set_flag(core::Stream s, std::string_view name) {
  SimStream& st = stream_impl(s);
  enter();  // a cudaMemcpyAsync: it needs the context lock like any other call (R8)
  WorkItem item;
  item.type = WorkItem::Type::set_flag;
  item.name = "set_flag";
  item.flag = &flag(name);
  if (GraphRec* g = st.capture())
    g->items.push_back(GraphItem{false, std::move(item), {}});
  else
    st.enqueue(std::move(item));
  leave();
}

core::DeviceEvent SimDevice::event(std::string_view name) {
  for (size_t i = 0; i < events_.size(); ++i)
    if (events_[i].name == name) return core::DeviceEvent{static_cast<int32_t>(i)};
  events_.emplace_back().name = std::string(name);
  return core::DeviceEvent{static_cast<int32_t>(events_.size() - 1)};
}

void SimDevice::record(core::DeviceEvent e, core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  if (st.capture() != nullptr)
    throw std::invalid_argument(
        fmt::format("rank{}: recording an event inside a graph capture is not simulated", rank_));
  SimEvent& ev = events_.at(static_cast<size_t>(e.id));
  ev.stream = &st;
  ev.target = st.enqueued();
  ev.clock = st.clock_at_end();
  ev.origin = rt_.host_state().call_site;
  leave();
}

void SimDevice::stream_wait(core::Stream s, core::DeviceEvent e) {
  SimStream& st = stream_impl(s);
  enter();
  const SimEvent& ev = events_.at(static_cast<size_t>(e.id));
  // Waiting on a never-recorded event is a no-op in CUDA.
  if (ev.stream != nullptr && ev.stream != &st) {
    WorkItem item;
    item.type = WorkItem::Type::wait_event;
    item.name = "wait_event";
    item.wait_stream = ev.stream;
    item.wait_target = ev.target;
    item.clocks.awaited = ev.clock;
    item.event = EventWaitSite{ev.name, ev.origin, rt_.host_state().call_site};
    if (GraphRec* g = st.capture())
      g->items.push_back(GraphItem{false, std::move(item), {}});
    else
      st.enqueue(std::move(item));
  }
  leave();
}

void SimDevice::event_sync(core::DeviceEvent e) {
  enter();
  reject_during_capture("cudaEventSynchronize", nullptr);
  const SimEvent& ev = events_.at(static_cast<size_t>(e.id));
  if (ev.stream != nullptr) {
    auto* st = const_cast<SimStream*>(ev.stream);
    const std::shared_ptr<const VectorClock> seen = ev.clock;  // the event may be recorded again meanwhile
    const EventWaitSite site{ev.name, ev.origin, rt_.host_state().call_site};  // lives while this thread waits
    st->wait_completed(
        ev.target,
        WaitInfo{.kind = WaitKind::event_sync, .what = "event_sync", .stream = st, .device = this, .event = &site});
    if (VectorClock* mine = world().host_clock(); mine != nullptr && seen) mine->join(*seen);
  }
  leave();
}

void SimDevice::stream_sync(core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  reject_during_capture("cudaStreamSynchronize", nullptr);
  const std::shared_ptr<const VectorClock> seen = st.clock_at_end();
  st.wait_completed(st.enqueued(), WaitInfo{.kind = WaitKind::stream_sync, .what = "stream_sync", .stream = &st});
  if (VectorClock* mine = world().host_clock(); mine != nullptr && seen) mine->join(*seen);
  leave();
}

void SimDevice::device_sync() {
  enter();
  reject_during_capture("cudaDeviceSynchronize", nullptr);
  blocking_.on_call(world().current(), BlockingKind::device_sync, "synchronizes the device",
                    std::string(rt_.host_state().call_site));
  drain(WaitInfo{
      .kind = WaitKind::device_drain, .what = "device_sync", .drain = BlockingKind::device_sync, .device = this});
  leave();
}

void SimDevice::reject_during_capture(std::string_view call, const SimStream* only) {
  for (const auto& st : streams_) {
    if (st->capture() == nullptr || (only != nullptr && st.get() != only)) continue;
    World& w = world();
    core::Finding f;
    f.verdict = core::Verdict::invalid_usage;
    f.kind = only != nullptr ? core::FindingKind::capture_conflict : core::FindingKind::capture_unsafe_call;
    f.summary = only != nullptr
                    ? fmt::format("{} calls {} on {}, which is being captured: CUDA rejects it", w.current().name, call,
                                  st->full_name())
                    : fmt::format(
                          "{} calls {} while {} is being captured into a CUDA graph: in the default (global) "
                          "capture mode CUDA rejects it and invalidates the capture "
                          "(cudaErrorStreamCaptureUnsupported)",
                          w.current().name, call, st->full_name());
    f.sites.push_back(
        core::Site{rank_, w.current().name, "", -1, std::string(call), std::string(rt_.host_state().call_site)});
    f.sites.push_back(core::Site{rank_, st->full_name(), "", -1, "capturing", ""});
    w.stop(std::move(f));
  }
}

void SimDevice::capture_begin(core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  reject_during_capture("cudaStreamBeginCapture", &st);
  auto g = std::make_unique<GraphRec>();
  g->id = static_cast<int32_t>(graphs_.size());
  g->capture_stream = &st;
  st.set_capture(g.get());
  graphs_.push_back(std::move(g));
  leave();
}

core::Graph SimDevice::capture_end(core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  GraphRec* g = st.capture();
  PPSPEC_ASSERT(g != nullptr, "{} ends a capture it never began (the loader rejects such programs)", st.full_name());
  g->complete = true;
  st.set_capture(nullptr);
  leave();
  return core::Graph{g->id};
}

void SimDevice::graph_launch(core::Graph g, core::Stream s) {
  SimStream& st = stream_impl(s);
  if (g.id < 0 || static_cast<size_t>(g.id) >= graphs_.size() || !graphs_[static_cast<size_t>(g.id)]->complete)
    throw std::invalid_argument(fmt::format("rank{}: graph {} was not captured", rank_, g.id));
  const GraphRec& rec = *graphs_[static_cast<size_t>(g.id)];
  enter();
  // cudaGraphLaunch into a stream under capture is refused (measured on H200, CUDA 13.0, driver
  // 580: "operation not permitted when stream is capturing"); a child graph needs
  // cudaGraphAddChildGraphNode, which programs cannot express.
  reject_during_capture("cudaGraphLaunch", &st);
  for (const GraphItem& item : rec.items) {
    if (item.is_comm)
      comms().replay(item.parts, st);
    else
      st.enqueue(item.work);
  }
  leave();
}

}  // namespace ppspec::sim
