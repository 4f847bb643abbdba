#include "real_backend/real_device.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>

#include "kernels/program_kernels.h"
#include "real_backend/cuda_check.h"
#include "real_backend/op_tracker.h"
#include "real_backend/real_communicator.h"
#include "real_backend/real_runtime.h"

namespace ppspec::real {
namespace {

// Setup-time calls come from the main thread: make the device current for them.
struct DeviceGuard {
  explicit DeviceGuard(core::RankId r) { PPSPEC_CUDA(cudaSetDevice(r)); }
};

// Each distinct (kernel, specialization) of a scenario is one CUDA function of its own, so that
// lazy loading loads it at its first launch, as it would a real new kernel.
class SlotRegistry {
 public:
  static SlotRegistry& instance() {
    static SlotRegistry r;
    return r;
  }
  int slot(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    if (it != slots_.end()) return it->second;
    if (static_cast<int>(slots_.size()) >= kernels::kBusySlots)
      throw std::runtime_error(fmt::format("more than {} distinct kernels in one run (the real backend has {} slots)",
                                           kernels::kBusySlots, kernels::kBusySlots));
    const int s = static_cast<int>(slots_.size());
    slots_.emplace(key, s);
    return s;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> slots_;
};

std::string key_of(core::KernelRef k) { return fmt::format("{}[{}]", k.name, k.spec); }

constexpr core::Time kDefaultKernel = 10 * core::kUs;

}  // namespace

RealDevice::RealDevice(RealRuntime& rt, core::RankId rank) : rt_(rt), rank_(rank) {
  DeviceGuard g(rank_);
  PPSPEC_CUDA(cudaFree(nullptr));  // create the primary context now, not inside a measured call
  PPSPEC_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&one_), sizeof(int), cudaHostAllocDefault));
  *one_ = 1;
}

RealDevice::~RealDevice() {
  // The process may be ending after a hang: release nothing that could block on the GPU.
}

core::ModuleLoading RealDevice::module_loading() const { return rt_.config().module_loading; }

core::Stream RealDevice::stream(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i].name == name) return core::Stream{static_cast<int32_t>(i)};
  DeviceGuard g(rank_);
  cudaStream_t s;
  PPSPEC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  streams_.push_back(StreamRec{std::string(name), s, false, {}, {}});
  return core::Stream{static_cast<int32_t>(streams_.size() - 1)};
}

const RealDevice::StreamRec& RealDevice::stream_rec(core::Stream s) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (s.id < 0 || static_cast<size_t>(s.id) >= streams_.size())
    throw std::invalid_argument(fmt::format("rank{}: no stream with id {}", rank_, s.id));
  return streams_[static_cast<size_t>(s.id)];
}

RealDevice::StreamRec& RealDevice::stream_rec(core::Stream s) {
  return const_cast<StreamRec&>(static_cast<const RealDevice*>(this)->stream_rec(s));
}

std::string_view RealDevice::stream_name(core::Stream s) const { return stream_rec(s).name; }
void* RealDevice::cuda_stream(core::Stream s) const { return stream_rec(s).handle; }
std::string RealDevice::full_name(core::Stream s) const { return fmt::format("rank{}.{}", rank_, stream_rec(s).name); }

std::vector<CapturedOp>* RealDevice::capture_of(core::Stream s) {
  StreamRec& r = stream_rec(s);
  return r.capturing ? &r.captured : nullptr;
}

core::Buffer RealDevice::alloc(core::Dtype dtype, core::Shape shape, std::string_view name) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMalloc('{}')", name));
  DeviceGuard g(rank_);
  const size_t bytes = static_cast<size_t>(shape.count()) * core::dtype_size(dtype);
  void* p = nullptr;
  PPSPEC_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 16)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    allocations_.push_back(p);
  }
  return core::Buffer(p, nullptr, dtype, shape);
}

int RealDevice::busy_slot(core::KernelRef k) { return SlotRegistry::instance().slot(key_of(k)); }

const RealDevice::JitKernel& RealDevice::jit_kernel(core::KernelRef k) {
  const std::string key = key_of(k);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jit_.find(key);
    if (it != jit_.end()) return it->second;
  }
  // As Triton does: compile on the host (slow, harmless), then cuModuleLoadData (R8).
  const NvrtcApi& rtc = nvrtc();
  nvrtcProgram prog;
  PPSPEC_NVRTC(rtc.CreateProgram(&prog, kernels::kJitBusySource, "ppspec_jit.cu", 0, nullptr, nullptr));
  const char* opts[] = {"--gpu-architecture=compute_90"};
  const nvrtcResult built = rtc.CompileProgram(prog, 1, opts);
  if (built != NVRTC_SUCCESS) {
    size_t n = 0;
    rtc.GetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    rtc.GetProgramLog(prog, log.data());
    rtc.DestroyProgram(&prog);
    throw CudaError(fmt::format("NVRTC could not compile {}: {}", key, log));
  }
  size_t ptx_size = 0;
  PPSPEC_NVRTC(rtc.GetPTXSize(prog, &ptx_size));
  std::string ptx(ptx_size, '\0');
  PPSPEC_NVRTC(rtc.GetPTX(prog, ptx.data()));
  rtc.DestroyProgram(&prog);
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  PPSPEC_CU(driver().ModuleLoadData(&mod, ptx.c_str()));
  PPSPEC_CU(driver().ModuleGetFunction(&fn, mod, "ppspec_jit_busy"));
  std::lock_guard<std::mutex> lock(mu_);
  return jit_.emplace(key, JitKernel{mod, fn}).first->second;
}

void RealDevice::launch(core::Stream s, const core::KernelLaunch& k) {
  void* st = cuda_stream(s);
  StreamRec& rec = stream_rec(s);
  RealRuntime::CallScope scope(rt_, fmt::format("launch {} on {}", key_of(k.kernel), full_name(s)));
  core::Event e;
  e.t = rt_.now();
  e.kind = core::EventKind::kernel_launched;
  e.rank = rank_;
  e.kernel = k.kernel.name;
  e.spec = k.kernel.spec;
  e.text = rec.name;
  rt_.publish(e);
  if (k.device_body) {
    StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), st, StepPart::kernels, rec.capturing);
    k.device_body(st);
    PPSPEC_CUDA(cudaGetLastError());
    return;
  }
  const uint64_t ns = static_cast<uint64_t>(k.duration >= 0 ? k.duration : kDefaultKernel);
  if (module_loading() == core::ModuleLoading::jit) {
    const JitKernel& jk = jit_kernel(k.kernel);
    unsigned long long arg = ns;
    void* args[] = {&arg};
    PPSPEC_CU(driver().LaunchKernel(static_cast<CUfunction>(jk.function), 1, 1, 1, 1, 1, 1, 0,
                                    static_cast<CUstream>(st), args, nullptr));
    return;
  }
  kernels::launch_busy(busy_slot(k.kernel), ns, st);
  PPSPEC_CUDA(cudaGetLastError());
}

void RealDevice::preload(core::KernelRef k, std::function<void()> device_load) {
  RealRuntime::CallScope scope(rt_, fmt::format("preload {}", key_of(k)));
  if (device_load) {
    device_load();
    return;
  }
  if (module_loading() == core::ModuleLoading::jit) {
    (void)jit_kernel(k);
    return;
  }
  // cudaFuncGetAttributes loads the function's module, as NCCL does for its own kernels at init.
  cudaFuncAttributes attr;
  PPSPEC_CUDA(cudaFuncGetAttributes(&attr, kernels::busy_kernel_address(busy_slot(k))));
}

void RealDevice::memcpy(core::Stream s, const core::Buffer& dst, const core::Buffer& src) {
  if (dst.bytes() != src.bytes())
    throw std::invalid_argument(
        fmt::format("rank{}: memcpy of {} bytes into {} bytes", rank_, src.bytes(), dst.bytes()));
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMemcpyAsync on {}", full_name(s)));
  StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), cuda_stream(s), StepPart::copies,
                            stream_rec(s).capturing);
  PPSPEC_CUDA(
      cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, as_stream(cuda_stream(s))));
}

void RealDevice::memset(core::Stream s, const core::Buffer& dst, uint8_t value) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMemsetAsync on {}", full_name(s)));
  StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), cuda_stream(s), StepPart::copies,
                            stream_rec(s).capturing);
  PPSPEC_CUDA(cudaMemsetAsync(dst.data(), value, dst.bytes(), as_stream(cuda_stream(s))));
}

void RealDevice::upload(core::Stream s, const core::Buffer& dst, std::vector<uint8_t> bytes) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMemcpyAsync H2D on {}", full_name(s)));
  StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), cuda_stream(s), StepPart::copies,
                            stream_rec(s).capturing);
  // From pageable memory the driver stages the bytes before the call returns, so `bytes` may go.
  PPSPEC_CUDA(
      cudaMemcpyAsync(dst.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, as_stream(cuda_stream(s))));
}

// Pinned host memory (core/runtime.h): cudaHostAlloc'd, so that cudaMemcpyAsync to and from it
// is a true asynchronous DMA on the stream; the host's accesses need no call (the ordering is the
// program's, which the simulator checks), only the check that the memory is pinned.
core::Buffer RealDevice::alloc_host(core::Dtype dtype, core::Shape shape, std::string_view name) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaHostAlloc('{}')", name));
  DeviceGuard g(rank_);
  const size_t bytes = static_cast<size_t>(shape.count()) * core::dtype_size(dtype);
  void* p = nullptr;
  PPSPEC_CUDA(cudaHostAlloc(&p, std::max<size_t>(bytes, 16), cudaHostAllocDefault));
  std::memset(p, 0, std::max<size_t>(bytes, 16));  // the simulator's pinned memory starts zeroed
  {
    std::lock_guard<std::mutex> lock(mu_);
    pinned_.emplace_back(static_cast<const uint8_t*>(p), bytes);
  }
  return core::Buffer(p, nullptr, dtype, shape);
}

void RealDevice::require_pinned(const core::Buffer& b, std::string_view what) const {
  const auto* first = static_cast<const uint8_t*>(b.data());
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [base, bytes] : pinned_)
    if (first >= base && first + b.bytes() <= base + bytes) return;
  throw std::invalid_argument(fmt::format("rank{}: {} needs pinned host memory (alloc_host)", rank_, what));
}

void RealDevice::pinned_copy(core::Stream s, const core::Buffer& dst, const core::Buffer& src, bool to_host) {
  const char* what = to_host ? "copy_to_host" : "copy_to_device";
  if (dst.bytes() != src.bytes())
    throw std::invalid_argument(
        fmt::format("rank{}: {} of {} bytes into {} bytes", rank_, what, src.bytes(), dst.bytes()));
  require_pinned(to_host ? dst : src, what);
  RealRuntime::CallScope scope(rt_,
                               fmt::format("cudaMemcpyAsync {} (pinned) on {}", to_host ? "D2H" : "H2D", full_name(s)));
  StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), cuda_stream(s), StepPart::copies,
                            stream_rec(s).capturing);
  PPSPEC_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(),
                              to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, as_stream(cuda_stream(s))));
}

void RealDevice::copy_to_host(core::Stream s, const core::Buffer& host_dst, const core::Buffer& src) {
  pinned_copy(s, host_dst, src, true);
}

void RealDevice::copy_to_device(core::Stream s, const core::Buffer& dst, const core::Buffer& host_src) {
  pinned_copy(s, dst, host_src, false);
}

void RealDevice::host_access(const core::Buffer& pinned, bool write) {
  (void)write;
  require_pinned(pinned, write ? "host_write" : "host_read");
}

namespace {

// A host function's body and who to tell when it throws (a host function cannot return an error).
struct HostJob {
  std::function<void()> fn;
  RealRuntime* rt = nullptr;
};

void CUDART_CB run_host_job(void* data) {
  std::unique_ptr<HostJob> job(static_cast<HostJob*>(data));
  try {
    job->fn();
  } catch (const std::exception& e) {
    job->rt->fail(fmt::format("a host function on the stream failed: {}", e.what()));
  }
}

}  // namespace

void* RealDevice::take_staging(size_t bytes, size_t& size_class) {
  size_class = 256;
  while (size_class < bytes) size_class *= 2;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<void*>& free = staging_free_[size_class];
    if (!free.empty()) {
      void* p = free.back();
      free.pop_back();
      return p;
    }
    if (staging_bytes_ + size_class > kStagingMax)
      throw std::runtime_error(
          fmt::format("rank{}: more than {} MiB of device-to-host copies in flight", rank_, kStagingMax >> 20));
    staging_bytes_ += size_class;
  }
  void* p = nullptr;
  PPSPEC_CUDA(cudaHostAlloc(&p, size_class, cudaHostAllocDefault));
  return p;
}

void RealDevice::download(core::Stream s, void* dst, const core::Buffer& src) {
  if (src.bytes() == 0) return;
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMemcpyAsync D2H on {}", full_name(s)));
  if (stream_rec(s).capturing) throw std::logic_error(fmt::format("rank{}: a download inside a graph capture", rank_));
  // Into pinned staging; the bytes reach `dst` at the stream's next host function or
  // synchronisation, which is when CUDA lets the host read them: the call returns at once (a copy
  // into pageable memory would block the host until the stream drained, a synchronisation the
  // engine did not ask for), and no host function per copy stalls the stream.
  size_t size_class = 0;
  void* stage = take_staging(src.bytes(), size_class);
  const cudaStream_t st = as_stream(cuda_stream(s));
  {
    StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), st, StepPart::copies, false);
    PPSPEC_CUDA(cudaMemcpyAsync(stage, src.data(), src.bytes(), cudaMemcpyDeviceToHost, st));
  }
  size_t held = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    StreamRec& rec = streams_[static_cast<size_t>(s.id)];
    rec.copies_out.push_back(PendingCopy{stage, size_class, dst, src.bytes(), rec.downloads++});
    held = rec.copies_out.size();
  }
  if (held >= kCopiesOutMax) host_func(s, [] {});  // bounded: a flush of its own
}

std::vector<RealDevice::PendingCopy> RealDevice::take_copies(core::Stream s, uint64_t before) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PendingCopy>& held = streams_.at(static_cast<size_t>(s.id)).copies_out;
  const auto first_later =
      std::find_if(held.begin(), held.end(), [before](const PendingCopy& c) { return c.seq >= before; });
  std::vector<PendingCopy> out(held.begin(), first_later);
  held.erase(held.begin(), first_later);
  return out;
}

void RealDevice::copy_out(std::vector<PendingCopy> copies) {
  for (const PendingCopy& c : copies) std::memcpy(c.dst, c.stage, c.bytes);
  std::lock_guard<std::mutex> lock(mu_);
  for (const PendingCopy& c : copies) staging_free_[c.size_class].push_back(c.stage);
}

void RealDevice::host_func(core::Stream s, std::function<void()> fn) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaLaunchHostFunc on {}", full_name(s)));
  if (stream_rec(s).capturing)
    throw std::logic_error(fmt::format("rank{}: a host function inside a graph capture", rank_));
  // The stream's staged downloads first: the function may read them.
  auto job = [this, copies = take_copies(s), fn = std::move(fn)]() mutable {
    copy_out(std::move(copies));
    fn();
  };
  PPSPEC_CUDA(cudaLaunchHostFunc(as_stream(cuda_stream(s)), run_host_job, new HostJob{std::move(job), &rt_}));
}

int* RealDevice::flag_ptr(std::string_view name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, p] : flags_)
      if (n == name) return p;
  }
  int* p = nullptr;
  PPSPEC_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), sizeof(int)));
  PPSPEC_CUDA(cudaMemset(p, 0, sizeof(int)));
  std::lock_guard<std::mutex> lock(mu_);
  flags_.emplace_back(std::string(name), p);
  return p;
}

void RealDevice::wait_flag(core::Stream s, std::string_view flag) {
  int* p = flag_ptr(flag);
  RealRuntime::CallScope scope(rt_, fmt::format("launch wait_flag('{}') on {}", flag, full_name(s)));
  kernels::launch_wait_flag(p, cuda_stream(s));
  PPSPEC_CUDA(cudaGetLastError());
  // A persistent kernel: tracked until it ends, so that a hang dump shows it spinning.
  auto op = std::make_unique<TrackedOp>();
  op->kernel = "wait_flag";
  op->label = std::string(flag);
  op->rank = rank_;
  op->actor = full_name(s);
  op->origin = std::string(rt_.call_site());
  TrackedOp* raw = rt_.tracker().add(std::move(op));
  auto done = std::make_shared<CompletionEvent>();
  cudaEvent_t ev;
  PPSPEC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  PPSPEC_CUDA(cudaEventRecord(ev, as_stream(cuda_stream(s))));
  done->event = ev;
  done->rank = rank_;
  rt_.tracker().attach({raw}, done);
}

void RealDevice::set_flag(core::Stream s, std::string_view flag) {
  int* p = flag_ptr(flag);
  RealRuntime::CallScope scope(rt_, fmt::format("cudaMemcpyAsync set_flag('{}') on {}", flag, full_name(s)));
  PPSPEC_CUDA(cudaMemcpyAsync(p, one_, sizeof(int), cudaMemcpyHostToDevice, as_stream(cuda_stream(s))));
}

core::DeviceEvent RealDevice::event(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < events_.size(); ++i)
    if (events_[i].first == name) return core::DeviceEvent{static_cast<int32_t>(i)};
  DeviceGuard g(rank_);
  cudaEvent_t ev;
  PPSPEC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  events_.emplace_back(std::string(name), ev);
  event_marks_.emplace_back(-1, 0);
  return core::DeviceEvent{static_cast<int32_t>(events_.size() - 1)};
}

namespace {
cudaEvent_t event_handle(const std::vector<std::pair<std::string, void*>>& events, core::DeviceEvent e) {
  return as_event(events.at(static_cast<size_t>(e.id)).second);
}
}  // namespace

void RealDevice::record(core::DeviceEvent e, core::Stream s) {
  cudaEvent_t ev;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ev = event_handle(events_, e);
    event_marks_.at(static_cast<size_t>(e.id)) = {s.id, streams_.at(static_cast<size_t>(s.id)).downloads};
  }
  RealRuntime::CallScope scope(rt_, fmt::format("cudaEventRecord on {}", full_name(s)));
  PPSPEC_CUDA(cudaEventRecord(ev, as_stream(cuda_stream(s))));
}

void RealDevice::stream_wait(core::Stream s, core::DeviceEvent e) {
  cudaEvent_t ev;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ev = event_handle(events_, e);
  }
  RealRuntime::CallScope scope(rt_, fmt::format("cudaStreamWaitEvent on {}", full_name(s)));
  PPSPEC_CUDA(cudaStreamWaitEvent(as_stream(cuda_stream(s)), ev, 0));
}

void RealDevice::event_sync(core::DeviceEvent e) {
  cudaEvent_t ev;
  std::string name;
  std::pair<int32_t, uint64_t> mark;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ev = event_handle(events_, e);
    name = events_.at(static_cast<size_t>(e.id)).first;
    mark = event_marks_.at(static_cast<size_t>(e.id));
  }
  RealRuntime::CallScope scope(rt_, fmt::format("cudaEventSynchronize('{}')", name));
  PPSPEC_CUDA(cudaEventSynchronize(ev));
  if (mark.first >= 0) copy_out(take_copies(core::Stream{mark.first}, mark.second));
}

void RealDevice::stream_sync(core::Stream s) {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaStreamSynchronize({})", full_name(s)));
  PPSPEC_CUDA(cudaStreamSynchronize(as_stream(cuda_stream(s))));
  copy_out(take_copies(s));
}

void RealDevice::device_sync() {
  RealRuntime::CallScope scope(rt_, fmt::format("cudaDeviceSynchronize (rank{})", rank_));
  PPSPEC_CUDA(cudaDeviceSynchronize());
  size_t streams = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams = streams_.size();
  }
  for (size_t i = 0; i < streams; ++i) copy_out(take_copies(core::Stream{static_cast<int32_t>(i)}));
}

void RealDevice::capture_begin(core::Stream s) {
  StreamRec& rec = stream_rec(s);
  RealRuntime::CallScope scope(rt_, fmt::format("cudaStreamBeginCapture on {}", full_name(s)));
  PPSPEC_CUDA(cudaStreamBeginCapture(as_stream(rec.handle), cudaStreamCaptureModeThreadLocal));
  std::lock_guard<std::mutex> lock(mu_);
  rec.capturing = true;
  rec.captured.clear();
}

core::Graph RealDevice::capture_end(core::Stream s) {
  StreamRec& rec = stream_rec(s);
  RealRuntime::CallScope scope(rt_, fmt::format("cudaStreamEndCapture on {}", full_name(s)));
  cudaGraph_t graph;
  PPSPEC_CUDA(cudaStreamEndCapture(as_stream(rec.handle), &graph));
  cudaGraphExec_t exec;
  PPSPEC_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::lock_guard<std::mutex> lock(mu_);
  rec.capturing = false;
  graphs_.push_back(GraphRec{exec, std::move(rec.captured)});
  rec.captured.clear();
  return core::Graph{static_cast<int32_t>(graphs_.size() - 1)};
}

void RealDevice::graph_launch(core::Graph g, core::Stream s) {
  GraphRec graph;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (g.id < 0 || static_cast<size_t>(g.id) >= graphs_.size())
      throw std::invalid_argument(fmt::format("rank{}: graph {} was not captured", rank_, g.id));
    graph = graphs_[static_cast<size_t>(g.id)];
  }
  RealRuntime::CallScope scope(rt_, fmt::format("cudaGraphLaunch on {}", full_name(s)));
  std::vector<TrackedOp*> posted;
  for (const CapturedOp& op : graph.comm_ops) op.comm->post_replayed(op, s, posted);
  StepProfiler::Timed timed(rt_.profiler(), rank_, rt_.current_step(), cuda_stream(s), StepPart::graphs, false);
  PPSPEC_CUDA(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph.exec), as_stream(cuda_stream(s))));
  if (posted.empty()) return;
  auto done = std::make_shared<CompletionEvent>();
  cudaEvent_t ev;
  PPSPEC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  PPSPEC_CUDA(cudaEventRecord(ev, as_stream(cuda_stream(s))));
  done->event = ev;
  done->rank = rank_;
  rt_.tracker().attach(posted, done);
}

}  // namespace ppspec::real
