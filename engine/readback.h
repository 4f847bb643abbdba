// Probe evidence read back from the device: the buffers are copied to host memory on a stream and,
// once the copies have landed, a host function on that stream turns them into events. The same
// calls on both runtimes (cudaMemcpyAsync D2H + cudaLaunchHostFunc on a GPU), so what a probe
// reports is what the kernels left in device memory at that point of the stream.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/assert.h"
#include "core/runtime.h"

namespace ppspec::engine {

class HostRows {
 public:
  explicit HostRows(size_t parts) : parts_(parts) {}
  std::vector<uint8_t>& bytes(size_t i) { return parts_.at(i); }
  template <typename T>
  std::span<const T> get(size_t i) const {
    const std::vector<uint8_t>& b = parts_.at(i);
    PPSPEC_ASSERT(b.size() % sizeof(T) == 0, "{} bytes read back as elements of {}", b.size(), sizeof(T));
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }
  template <typename T>
  T at(size_t i, int64_t element) const {
    const auto s = get<T>(i);
    PPSPEC_ASSERT(element >= 0 && static_cast<size_t>(element) < s.size(), "element {} of {} read back", element,
                  s.size());
    return s[static_cast<size_t>(element)];
  }

 private:
  std::vector<std::vector<uint8_t>> parts_;
};

// Copies `bufs` to the host on `s`, then runs `use` there with them. `use` runs off the calling
// actor (on CUDA's host-function thread on a GPU): it may publish events, nothing else.
inline void read_back(core::Device& dev, core::Stream s, const std::vector<core::Buffer>& bufs,
                      std::function<void(const HostRows&)> use) {
  auto rows = std::make_shared<HostRows>(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    rows->bytes(i).resize(bufs[i].bytes());
    dev.download(s, rows->bytes(i).data(), bufs[i]);
  }
  dev.host_func(s, [rows, use = std::move(use)] { use(*rows); });
}

}  // namespace ppspec::engine
