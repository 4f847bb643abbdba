// Which rows a kernel really stored, on either runtime (kernels/write_check.h): before the kernel a
// row range of up to three buffers is saved and poisoned; after it, the restore kernel flags every
// element still poison and gives it its saved value back.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/rank_context.h"
#include "engine/readback.h"
#include "kernels/write_check.h"

namespace ppspec::engine {

class WriteCheck {
 public:
  static constexpr size_t kBuffersMax = kernels::kCheckBandsMax;
  // Ranges of at most `rows` rows of at most 8-byte elements.
  WriteCheck(RankContext& ctx, int64_t rows);

  void poison(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last);
  void restore(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last);
  // The flags of the last check, [kBuffersMax, stride()] u8: band b for bufs[b], element e of the range.
  const core::Buffer& flags() const { return unwritten_; }
  int64_t stride() const { return rows_; }

 private:
  RankContext& ctx_;
  int64_t rows_;
  core::Buffer saved_;
  core::Buffer unwritten_;
};

// 1 when element `e` of any of `bands` checked buffers was not stored (`part`: the flags' place in `h`).
int64_t unwritten_at(const HostRows& h, size_t part, int bands, int64_t stride, int64_t e);

}  // namespace ppspec::engine
