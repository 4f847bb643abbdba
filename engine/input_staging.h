// A step's host-built inputs staged through reused pinned host buffers, as vLLM's model runner
// stages them (CpuGpuBuffer: the host writes a pinned CPU tensor, `copy_to_gpu` copies it with
// non_blocking=True), with `[serving] pin_memory`. The copy reads the pinned buffer when the stream
// reaches it, so a host that runs ahead of its stream must not rewrite the buffer for step N + 1
// before step N's copy ran: vLLM's synchronize_input_prep synchronises on prepare_inputs_event on
// entry, before _update_states writes anything, and records the event on exit, after the copies
// are enqueued (vLLM PRs #24527 and #25279). Without pin_memory every put is a pageable copy
// (core::Device::upload, which takes the bytes at once), as the engine stages everything else.
//
// Staged: the request tables' rows (engine/request_tables.h) and block table, and the batch's
// query_start_loc, idx_mapping, query_len and attention split (engine/step_inputs.h).
// Simplifications: the other uploads (the sampler's logit offsets, the drafter's batch, the
// deferred update's index, recurrent resets) stay pageable; the pinned twins start as the device
// buffers do, as poison, so that a row no request wrote reads the same as without pinning.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/assert.h"
#include "core/runtime.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class InputStaging {
 public:
  explicit InputStaging(RankContext& ctx);
  bool pinned() const { return ctx_.cfg.serving.pin_memory; }
  // A device buffer's pinned twin (its dtype and shape); an empty buffer without pin_memory.
  core::Buffer twin(const core::Buffer& dev, const char* name);

  // synchronize_input_prep's entry (before the step's first host write) and exit (after its last
  // copy is enqueued on main).
  void begin();
  void end();

  // Rows [first, first + values / cols) of a device buffer: the host writes `values` into the same
  // rows of its twin `host`, then copies them on main; without pin_memory, a pageable upload.
  template <typename T>
  void put_rows(const core::Buffer& dev, const core::Buffer& host, int64_t first, const std::vector<T>& values) {
    const auto cols = static_cast<size_t>(dev.shape().cols);
    PPSPEC_ASSERT(values.size() % cols == 0, "{} values staged into rows of {}", values.size(), cols);
    const core::Buffer dev_rows = dev.rows(first, static_cast<int64_t>(values.size() / cols));
    if (!pinned()) {
      ctx_.upload(dev_rows, values);
      return;
    }
    const core::Buffer host_rows = host.rows(first, dev_rows.shape().rows);
    write(host_rows, values);
    copy(dev_rows, host_rows);
  }
  // The host writes `values` into `host_view`, to be copied later by `copy` (vLLM's block table:
  // _update_states appends block ids, _prepare_inputs commits the rows).
  template <typename T>
  void write(const core::Buffer& host_view, const std::vector<T>& values) {
    PPSPEC_ASSERT(pinned() && values.size() * sizeof(T) == host_view.bytes(), "{} bytes staged into {} bytes",
                  values.size() * sizeof(T), host_view.bytes());
    const std::span<T> host = ctx_.dev.host_write<T>(host_view);
    if (!host.empty() && !values.empty()) std::memcpy(host.data(), values.data(), host_view.bytes());
  }
  // copy_to_gpu: the twin's view to the device's, non-blocking on main.
  void copy(const core::Buffer& dev_view, const core::Buffer& host_view);

 private:
  RankContext& ctx_;
  core::DeviceEvent prepared_;  // prepare_inputs_event, recorded on main
  int twins_ = 0;
};

}  // namespace ppspec::engine
