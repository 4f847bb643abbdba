#include "engine/input_staging.h"

#include "kernels/write_check.h"

namespace ppspec::engine {

namespace {
// Bounds the pinned buffers a rank stages through (RequestTables and StepInputs own them).
constexpr int kTwinsMax = 32;
}  // namespace

InputStaging::InputStaging(RankContext& ctx) : ctx_(ctx) {
  if (pinned()) prepared_ = ctx.dev.event("prepare_inputs");
}

core::Buffer InputStaging::twin(const core::Buffer& dev, const char* name) {
  if (!pinned()) return {};
  PPSPEC_ASSERT(++twins_ <= kTwinsMax, "rank{} stages through more than {} pinned buffers", ctx_.rank, kTwinsMax);
  core::Buffer host = ctx_.dev.alloc_host(dev.dtype(), dev.shape(), name);
  // Before serving: nothing runs to race with, and the bytes stay unwritten, like the device's.
  if (host.backed()) std::memset(host.data(), kernels::kPoisonByte, host.bytes());
  return host;
}

void InputStaging::begin() {
  if (!pinned() || ctx_.cfg.faults.input_prep_without_sync) return;
  // The previous step's copies have read the twins: the host may rewrite them (a never-recorded
  // event is complete, as torch.Event's).
  ctx_.dev.event_sync(prepared_);
}

void InputStaging::end() {
  if (pinned()) ctx_.dev.record(prepared_, ctx_.main);
}

void InputStaging::copy(const core::Buffer& dev_view, const core::Buffer& host_view) {
  PPSPEC_ASSERT(pinned() && dev_view.bytes() == host_view.bytes() && dev_view.dtype() == host_view.dtype(),
                "a staged copy of {} bytes into {} bytes", host_view.bytes(), dev_view.bytes());
  if (dev_view.bytes() > 0) ctx_.dev.copy_to_device(ctx_.main, dev_view, host_view);
}

}  // namespace ppspec::engine
