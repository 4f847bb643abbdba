#include "sim/device.h"

#include <cassert>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "core/assert.h"
#include "core/hazard_kinds.h"
#include "sim/comm_system.h"
#include "sim/sim_runtime.h"

namespace ppspec::sim {

SimDevice::SimDevice(SimRuntime& rt, core::RankId rank) : rt_(rt), rank_(rank) {}
SimDevice::~SimDevice() = default;

World& SimDevice::world() const { return rt_.world(); }
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
  if (s.id < 0 || static_cast<size_t>(s.id) >= streams_.size())
    throw std::invalid_argument(fmt::format("rank{}: no stream with id {}", rank_, s.id));
  return *streams_[static_cast<size_t>(s.id)];
}

void SimDevice::enter() {
  World& w = world();
  Fiber& self = w.current();
  while (lock_holder_ != nullptr && lock_holder_ != &self)
    lock_waiters_.wait(w, WaitInfo{.kind = WaitKind::context_lock, .what = "context lock", .device = this,
                                   .holder = lock_holder_});
}

void SimDevice::leave() {
  World& w = world();
  w.sleep(w.jittered(w.config().cost.host_call));
}

void SimDevice::hazard_if_comm_in_flight(std::string_view kind, std::string_view action) {
  // Only a kernel whose partner is not posted yet can hang the call: its partner may depend on
  // this very thread. Kernels whose partners are all posted finish on their own.
  const CommKernel* risky = nullptr;
  for (const CommKernel* k : comm_live) {
    if (comms().awaits_unposted_partner(*k)) {
      risky = k;
      break;
    }
  }
  const SimStream* spinning = risky == nullptr ? stream_awaiting_unqueued_flag() : nullptr;
  if (risky == nullptr && spinning == nullptr) return;
  const std::string key = fmt::format("{}/{}", kind, action);
  if (!hazards_noted_.insert(key).second) return;
  const std::string what = risky != nullptr
                               ? fmt::format("a communication kernel is in flight on its device ({})", comms().describe_kernel(*risky))
                               : fmt::format("a persistent kernel on {} spins until flag '{}' is set, and no set is queued",
                                             spinning->full_name(), spinning->head()->flag->name);
  core::Finding f;
  f.verdict = core::Verdict::hazard;
  f.kind = std::string(kind);
  f.summary = fmt::format(
      "rank{} {} while {}; the call waits for the device to drain, so it hangs if what that kernel waits for "
      "depends on this thread (R8)",
      rank_, action, what);
  const Fiber& self = world().current();
  f.sites.push_back(core::Site{rank_, self.name, "", -1, std::string(action), std::string(rt_.host_state().call_site)});
  f.sites.push_back(core::Site{rank_, risky != nullptr ? risky->primary()->full_name() : spinning->full_name(), "", -1,
                               risky != nullptr ? comms().describe_kernel(*risky) : "wait_flag", ""});
  if (world().bus().active()) {
    core::Event e = world().event(core::EventKind::note, rank_, self.name);
    e.text = f.summary;
    world().bus().publish(e);
  }
  world().note(std::move(f));
}

void SimDevice::drain(const WaitInfo& info) {
  // "All earlier work": what was enqueued before this call. The caller cannot enqueue meanwhile.
  std::vector<uint64_t> targets;
  targets.reserve(streams_.size());
  for (const auto& s : streams_) targets.push_back(s->enqueued());
  for (size_t i = 0; i < targets.size(); ++i) {
    WaitInfo wi = info;
    wi.stream = streams_[i].get();
    streams_[i]->wait_completed(targets[i], wi);
  }
}

void SimDevice::ensure_loaded(core::KernelRef k, bool preload) {
  World& w = world();
  const auto mode = module_loading();
  if (mode == core::ModuleLoading::eager) return;  // every module loaded at init
  std::string key = fmt::format("{}[{}]", k.name, k.spec);
  if (loaded_.count(key)) return;
  if (mode == core::ModuleLoading::jit) w.sleep(w.jittered(w.config().cost.jit_compile));  // host-only
  // R8: the load takes the context lock, then waits for every earlier kernel on the device.
  enter();
  if (loaded_.count(key)) return;  // another thread of this device loaded it meanwhile
  lock_holder_ = &w.current();
  loading_ = key;
  hazard_if_comm_in_flight(core::kHazardModuleLoadInFlight, fmt::format("loads module {}{}", key, preload ? " (preload)" : ""));
  drain(WaitInfo{.kind = WaitKind::device_drain, .what = "module load", .device = this});
  w.sleep(w.jittered(w.config().cost.module_load));
  loaded_.insert(key);
  if (w.bus().active()) {
    core::Event e = w.event(core::EventKind::module_load, rank_, w.current().name);
    e.kernel = k.name;
    e.spec = k.spec;
    e.text = rt_.host_state().call_site;  // where the host was: reports name the step
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
    hazard_if_comm_in_flight(core::kHazardMallocInFlight, "allocates device memory");
    drain(WaitInfo{.kind = WaitKind::device_drain, .what = "malloc", .device = this});
    leave();
  }
  constexpr int64_t kElementsMax = int64_t{1} << 48;
  PPSPEC_ASSERT(shape.rows >= 0 && shape.cols >= 1 && shape.rows <= kElementsMax / shape.cols, "a buffer of {} x {}",
                shape.rows, shape.cols);
  if (!w.config().backed_memory) return core::Buffer(nullptr, nullptr, dtype, shape);
  const size_t bytes = static_cast<size_t>(shape.count()) * core::dtype_size(dtype);
  rt_.take_memory(2 * bytes, rank_, name);  // data and shadow
  std::vector<uint8_t>& data = memory_.emplace_back(bytes, 0);
  std::vector<uint8_t>& shadow = memory_.emplace_back(bytes, 0);
  return core::Buffer(data.data(), shadow.data(), dtype, shape);
}

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
  WorkItem item{WorkItem::Type::kernel, name, "", world().config().cost.memcpy, std::move(body)};
  if (GraphRec* g = st.capture())
    g->items.push_back(GraphItem{false, std::move(item), {}});
  else
    st.enqueue(std::move(item));
  leave();
}

void SimDevice::memcpy(core::Stream s, const core::Buffer& dst, const core::Buffer& src) {
  if (dst.bytes() != src.bytes())
    throw std::invalid_argument(fmt::format("rank{}: memcpy of {} bytes into {} bytes", rank_, src.bytes(), dst.bytes()));
  enqueue_builtin(stream_impl(s), "memcpy", [dst, src] {
    if (src.bytes() == 0 || !dst.backed() || !src.backed()) return;
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
    std::memset(dst.data(), value, dst.bytes());
    dst.mark_all_written();
  });
}

void SimDevice::upload(core::Stream s, const core::Buffer& dst, std::vector<uint8_t> bytes) {
  if (bytes.size() > dst.bytes())
    throw std::invalid_argument(fmt::format("rank{}: upload of {} bytes into {} bytes", rank_, bytes.size(), dst.bytes()));
  enqueue_builtin(stream_impl(s), "memcpy_h2d", [dst, data = std::move(bytes)] {
    if (data.empty() || !dst.backed()) return;
    std::memcpy(dst.data(), data.data(), data.size());
    if (dst.shadow() != nullptr) std::memset(dst.shadow(), 1, data.size());
  });
}

void SimDevice::download(core::Stream s, void* dst, const core::Buffer& src) {
  enqueue_builtin(stream_impl(s), "memcpy_d2h", [dst, src] {
    if (src.bytes() != 0 && src.backed()) std::memcpy(dst, src.data(), src.bytes());
  });
}

void SimDevice::host_func(core::Stream s, std::function<void()> fn) {
  // A host node in a captured graph runs at every replay, as in CUDA.
  enqueue_builtin(stream_impl(s), "host_func", std::move(fn));
}

SimFlag& SimDevice::flag(std::string_view name) {
  for (SimFlag& f : flags_)
    if (f.name == name) return f;
  flags_.push_back(SimFlag{std::string(name), false, {}});
  return flags_.back();
}

const SimStream* SimDevice::stream_awaiting_unqueued_flag() const {
  for (const auto& st : streams_) {
    const WorkItem* head = st->head();
    if (head == nullptr || head->type != WorkItem::Type::wait_flag || head->flag->set) continue;
    bool queued = false;
    for (const auto& other : streams_) queued = queued || other->queues_set_of(head->flag);
    if (!queued) return st.get();
  }
  return nullptr;
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
  events_.push_back(SimEvent{std::string(name)});
  return core::DeviceEvent{static_cast<int32_t>(events_.size() - 1)};
}

void SimDevice::record(core::DeviceEvent e, core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  if (st.capture() != nullptr)
    throw std::invalid_argument(fmt::format("rank{}: recording an event inside a graph capture is not simulated", rank_));
  SimEvent& ev = events_.at(static_cast<size_t>(e.id));
  ev.stream = &st;
  ev.target = st.enqueued();
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
    st->wait_completed(ev.target, WaitInfo{.kind = WaitKind::event_sync, .what = "event_sync", .stream = st,
                                           .device = this,
                                           .event = EventWaitSite{ev.name, ev.origin, rt_.host_state().call_site}});
  }
  leave();
}

void SimDevice::stream_sync(core::Stream s) {
  SimStream& st = stream_impl(s);
  enter();
  reject_during_capture("cudaStreamSynchronize", nullptr);
  st.wait_completed(st.enqueued(), WaitInfo{.kind = WaitKind::stream_sync, .what = "stream_sync", .stream = &st});
  leave();
}

void SimDevice::device_sync() {
  enter();
  reject_during_capture("cudaDeviceSynchronize", nullptr);
  hazard_if_comm_in_flight(core::kHazardDeviceSyncInFlight, "synchronizes the device");
  drain(WaitInfo{.kind = WaitKind::device_drain, .what = "device_sync", .device = this});
  leave();
}

void SimDevice::reject_during_capture(std::string_view call, const SimStream* only) {
  for (const auto& st : streams_) {
    if (st->capture() == nullptr || (only != nullptr && st.get() != only)) continue;
    World& w = world();
    core::Finding f;
    f.verdict = core::Verdict::invalid_usage;
    f.kind = only != nullptr ? "capture-conflict" : "capture-unsafe-call";
    f.summary = only != nullptr
                    ? fmt::format("{} calls {} on {}, which is being captured: CUDA rejects it", w.current().name, call,
                                  st->full_name())
                    : fmt::format("{} calls {} while {} is being captured into a CUDA graph: in the default (global) "
                                  "capture mode CUDA rejects it and invalidates the capture "
                                  "(cudaErrorStreamCaptureUnsupported)",
                                  w.current().name, call, st->full_name());
    f.sites.push_back(core::Site{rank_, w.current().name, "", -1, std::string(call), std::string(rt_.host_state().call_site)});
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
