#include "engine/write_check.h"

#include "core/assert.h"
#include "engine/span_of.h"
#include "kernels/write_check.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

WriteCheck::WriteCheck(RankContext& ctx, int64_t rows) : ctx_(ctx), rows_(rows) {
  saved_ = ctx.alloc(core::Dtype::u8, kBuffersMax, rows * 8, "write_check.saved");
  unwritten_ = ctx.alloc(core::Dtype::u8, kBuffersMax, rows, "write_check.unwritten");
}

void WriteCheck::poison(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last) {
  PPSPEC_ASSERT(bufs.size() <= kBuffersMax && 0 <= first && first <= last && last <= rows_,
                "write check of {} buffers, rows [{}, {}) of {}", bufs.size(), first, last, rows_);
  kn::SaveAndPoisonKernel k{};
  k.bands = static_cast<int32_t>(bufs.size());
  for (size_t b = 0; b < bufs.size(); ++b) {
    const core::Buffer range = bufs[b].rows(first, last - first).as_bytes();
    PPSPEC_ASSERT(range.count() <= rows_ * 8, "a write check of elements wider than 8 bytes");
    k.data[b] = span_of<uint8_t>(range);
    k.saved[b] = span_of<uint8_t>(saved_.slice(static_cast<int64_t>(b), 0, range.count()));
  }
  ctx_.run("save_and_poison", "", k, k.bands);
}

void WriteCheck::restore(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last) {
  kn::RestoreUnwrittenBandsKernel k{};
  k.bands = static_cast<int32_t>(bufs.size());
  k.elements = last - first;
  for (size_t b = 0; b < bufs.size(); ++b) {
    const core::Buffer range = bufs[b].rows(first, last - first);
    const core::Buffer bytes = range.as_bytes();
    const auto band = static_cast<int64_t>(b);
    k.band[b] = kn::RestoreUnwrittenKernel{
        static_cast<int32_t>(core::dtype_size(range.dtype()) * static_cast<size_t>(range.shape().cols)),
        span_of<uint8_t>(bytes), span_of<uint8_t>(saved_.slice(band, 0, bytes.count())),
        span_of<uint8_t>(unwritten_.slice(band, 0, last - first))};
  }
  ctx_.run("restore_unwritten", "", k, static_cast<int64_t>(k.bands) * k.elements);
}

int64_t unwritten_at(const HostRows& h, size_t part, int bands, int64_t stride, int64_t e) {
  for (int b = 0; b < bands; ++b)
    if (h.at<uint8_t>(part, b * stride + e) != 0) return 1;
  return 0;
}

}  // namespace ppspec::engine
