// One GPU: non-blocking streams, events, cudaMalloc'd buffers, kernel launch under the three
// module-loading modes, persistent flag kernels, and CUDA-graph capture and replay.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/runtime.h"

namespace ppspec::real {

class RealRuntime;
class RealCommunicator;

// A communication operation captured into a graph: posted anew by every launch (R9).
struct CapturedOp {
  RealCommunicator* comm = nullptr;
  core::OpDesc desc;
  std::string label;
  int peer = -1;  // comm rank
};

class RealDevice final : public core::Device {
 public:
  RealDevice(RealRuntime& rt, core::RankId rank);
  ~RealDevice() override;

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

  // ---- backend internals ----
  void* cuda_stream(core::Stream s) const;  // cudaStream_t
  std::string full_name(core::Stream s) const;
  // Non-null while the stream captures: communication operations are recorded there, not posted.
  std::vector<CapturedOp>* capture_of(core::Stream s);

 private:
  // A download's bytes in pinned staging, copied out to the caller's memory at the stream's next
  // host function or synchronisation.
  struct PendingCopy {
    void* stage = nullptr;
    size_t size_class = 0;
    void* dst = nullptr;
    size_t bytes = 0;
    uint64_t seq = 0;  // the stream's count of downloads before it
  };
  struct StreamRec {
    std::string name;
    void* handle = nullptr;  // cudaStream_t
    bool capturing = false;
    std::vector<CapturedOp> captured;
    std::vector<PendingCopy> copies_out;  // guarded by mu_
    uint64_t downloads = 0;               // staged so far
  };
  struct GraphRec {
    void* exec = nullptr;  // cudaGraphExec_t
    std::vector<CapturedOp> comm_ops;
  };
  struct JitKernel {
    void* module = nullptr;    // CUmodule
    void* function = nullptr;  // CUfunction
  };
  const StreamRec& stream_rec(core::Stream s) const;
  StreamRec& stream_rec(core::Stream s);
  int* flag_ptr(std::string_view name);
  const JitKernel& jit_kernel(core::KernelRef k);  // compiles and loads at first use
  int busy_slot(core::KernelRef k);
  void* take_staging(size_t bytes, size_t& size_class);  // pinned host memory for a download
  // Copies a stream's staged downloads out (their DMA is complete) and returns the staging.
  void copy_out(std::vector<PendingCopy> copies);
  // The stream's staged downloads with a sequence number below `before` (all by default).
  std::vector<PendingCopy> take_copies(core::Stream s, uint64_t before = UINT64_MAX);
  static constexpr size_t kCopiesOutMax = 256;  // staged downloads a stream holds before a flush

  RealRuntime& rt_;
  core::RankId rank_;
  mutable std::mutex mu_;          // guards the tables below, never held across a blocking CUDA call
  std::deque<StreamRec> streams_;  // deque: references stay valid as streams are added
  std::vector<std::pair<std::string, void*>> events_;  // cudaEvent_t
  // Per event: the stream it was last recorded on and how many downloads that stream had staged
  // then: an event synchronisation makes exactly those readable.
  std::vector<std::pair<int32_t, uint64_t>> event_marks_;
  std::vector<std::pair<std::string, int*>> flags_;
  std::vector<GraphRec> graphs_;
  std::map<std::string, JitKernel> jit_;
  std::vector<void*> allocations_;
  std::vector<std::pair<const uint8_t*, size_t>>
      pinned_;  // alloc_host's blocks: checked, never freed (as allocations_)
  void require_pinned(const core::Buffer& b, std::string_view what) const;
  void pinned_copy(core::Stream s, const core::Buffer& dst, const core::Buffer& src, bool to_host);
  // Pinned staging of downloads, by power-of-two size class; a block returns to its list when the
  // host function that copied it out has run.
  static constexpr size_t kStagingMax = size_t{256} << 20;
  std::map<size_t, std::vector<void*>> staging_free_;
  size_t staging_bytes_ = 0;
  int* one_ = nullptr;  // pinned host word holding 1, the source of set_flag's copy
};

}  // namespace ppspec::real
