// Pinned host memory on a simulated device (core/runtime.h, alloc_host): the buffers, the copies
// between them and device memory, and the host's declared accesses, which the race detector checks
// against the copies' DMA (sim/race_detector.h).
//
// Simplifications: pinned memory is host memory with a shadow, like every simulated buffer; the
// DMA of a copy happens at once when its stream item runs (a real one spans the item's duration,
// which only widens the window the detector already reports); alloc_host is no synchronisation.
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "core/assert.h"
#include "sim/device.h"
#include "sim/race_detector.h"
#include "sim/sim_runtime.h"

namespace ppspec::sim {

core::Buffer SimDevice::alloc_host(core::Dtype dtype, core::Shape shape, std::string_view name) {
  World& w = world();
  if (w.in_fiber() && w.current().kind == FiberKind::host) {
    enter();
    reject_during_capture("cudaHostAlloc", nullptr);
    leave();
  }
  return backed_memory(dtype, shape, name, true);
}

void SimDevice::require_pinned(const core::Buffer& b, bool pinned, std::string_view what) const {
  if (!b.backed()) return;  // modelled by size only: nothing to tell
  const auto* first = static_cast<const uint8_t*>(b.data());
  bool in = false;
  for (const auto& [begin, end] : pinned_) in = in || (first >= begin && first + b.bytes() <= end);
  if (in != pinned)
    throw std::invalid_argument(fmt::format("rank{}: {} needs {} memory, and the buffer is {}", rank_, what,
                                            pinned ? "pinned host (alloc_host)" : "device (alloc)",
                                            in ? "pinned host memory" : "not pinned host memory"));
}

namespace {

// The DMA of one copy: the bytes and their shadow. The pinned end is noted first, so that a race
// with the host is named as such before one the device end may have with a later kernel.
void dma_copy(const core::Buffer& dst, const core::Buffer& src, bool dst_is_pinned) {
  if (src.bytes() == 0 || !dst.backed() || !src.backed()) return;
  if (dst_is_pinned) kernels::note_access(dst.data(), src.bytes(), true);
  kernels::note_access(src.data(), src.bytes(), false);
  if (!dst_is_pinned) kernels::note_access(dst.data(), src.bytes(), true);
  std::memcpy(dst.data(), src.data(), src.bytes());
  if (dst.shadow() != nullptr && src.shadow() != nullptr) std::memcpy(dst.shadow(), src.shadow(), src.bytes());
}

void require_same_size(core::RankId rank, std::string_view what, const core::Buffer& dst, const core::Buffer& src) {
  if (dst.bytes() != src.bytes())
    throw std::invalid_argument(
        fmt::format("rank{}: {} of {} bytes into {} bytes", rank, what, src.bytes(), dst.bytes()));
}

}  // namespace

void SimDevice::copy_to_host(core::Stream s, const core::Buffer& host_dst, const core::Buffer& src) {
  require_same_size(rank_, "copy_to_host", host_dst, src);
  require_pinned(host_dst, true, "copy_to_host's destination");
  require_pinned(src, false, "copy_to_host's source");
  enqueue_builtin(stream_impl(s), "memcpy_d2h_async", [host_dst, src] { dma_copy(host_dst, src, true); });
}

void SimDevice::copy_to_device(core::Stream s, const core::Buffer& dst, const core::Buffer& host_src) {
  require_same_size(rank_, "copy_to_device", dst, host_src);
  require_pinned(host_src, true, "copy_to_device's source");
  require_pinned(dst, false, "copy_to_device's destination");
  enqueue_builtin(stream_impl(s), "memcpy_h2d_async", [dst, host_src] { dma_copy(dst, host_src, false); });
}

void SimDevice::host_access(const core::Buffer& pinned, bool write) {
  require_pinned(pinned, true, write ? "host_write" : "host_read");
  World& w = world();
  if (w.in_fiber() && w.current().kind == FiberKind::stream) {
    // Inside a host function: the access is the stream item's, ordered after the stream's earlier work.
    if (pinned.backed()) kernels::note_access(pinned.data(), pinned.bytes(), write);
    return;
  }
  if (write && pinned.backed() && pinned.shadow() != nullptr) pinned.mark_all_written();
  if (!w.in_fiber()) return;  // set-up before the run: nothing runs yet to race with
  if (RaceDetector* races = rt_.races()) {
    // The host thread's own component moves on at each access, so that work it enqueues later is
    // ordered after the access and work enqueued earlier is not (sim/race_detector.h).
    Fiber& self = w.current();
    self.clock.bump(self.id);
    races->host_access(self.id, self.clock,
                       AccessItem{nullptr, write ? "host_write" : "host_read", "", caller_site(), {}, 0, self.name},
                       pinned, write);
  }
  w.yield();  // a host memory access: an interleaving point, no CUDA call (no context lock, no cost)
}

}  // namespace ppspec::sim
