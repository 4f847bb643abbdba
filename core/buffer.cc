#include "core/buffer.h"

#include <cstring>

#include "core/assert.h"

namespace ppspec::core {

Buffer Buffer::rows(int64_t first, int64_t n) const {
  PPSPEC_ASSERT(first >= 0 && n >= 0 && first + n <= shape_.rows, "rows [{}, {}) of a buffer of {} rows", first,
                first + n, shape_.rows);
  const size_t offset = static_cast<size_t>(first * shape_.cols) * dtype_size(dtype_);
  return Buffer(static_cast<std::byte*>(data_) + offset, shadow_ ? shadow_ + offset : nullptr, dtype_,
                Shape{n, shape_.cols});
}

Buffer Buffer::slice(int64_t row, int64_t first, int64_t n) const {
  PPSPEC_ASSERT(row >= 0 && row < shape_.rows && first >= 0 && n >= 0 && first + n <= shape_.cols,
                "row {} elements [{}, {}) of a [{}, {}] buffer", row, first, first + n, shape_.rows, shape_.cols);
  const size_t offset = static_cast<size_t>(row * shape_.cols + first) * dtype_size(dtype_);
  return Buffer(static_cast<std::byte*>(data_) + offset, shadow_ ? shadow_ + offset : nullptr, dtype_, Shape{n, 1});
}

void Buffer::mark_written(int64_t first_elem, int64_t n) const {
  if (!shadow_ || n <= 0) return;
  PPSPEC_ASSERT(first_elem >= 0 && first_elem + n <= count(), "elements [{}, {}) of {}", first_elem, first_elem + n,
                count());
  const size_t es = dtype_size(dtype_);
  std::memset(shadow_ + first_elem * es, 1, static_cast<size_t>(n) * es);
}

void Buffer::mark_bytes_written(size_t first, size_t n) const {
  if (!shadow_ || n == 0) return;
  PPSPEC_ASSERT(first + n <= bytes(), "bytes [{}, {}) of {}", first, first + n, bytes());
  std::memset(shadow_ + first, 1, n);
}

int64_t Buffer::uninitialised_elements(int64_t first_elem, int64_t n) const {
  if (!shadow_) return 0;
  PPSPEC_ASSERT(first_elem >= 0 && n >= 0 && first_elem + n <= count(), "elements [{}, {}) of {}", first_elem,
                first_elem + n, count());
  const size_t es = dtype_size(dtype_);
  int64_t bad = 0;
  for (int64_t e = first_elem; e < first_elem + n; ++e) {
    for (size_t b = 0; b < es; ++b) {
      if (shadow_[e * es + b] == 0) {
        ++bad;
        break;
      }
    }
  }
  return bad;
}

}  // namespace ppspec::core
