// Typed views over device memory. In the simulator the memory is host memory with a shadow byte per
// data byte that says whether it was ever written, so a read of never-written padding is detectable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"

namespace ppspec::core {

struct Shape {
  int64_t rows = 0;
  int64_t cols = 1;
  int64_t count() const { return rows * cols; }
  friend bool operator==(const Shape&, const Shape&) = default;
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(void* data, uint8_t* shadow, Dtype dtype, Shape shape)
      : data_(data), shadow_(shadow), dtype_(dtype), shape_(shape) {}

  void* data() const { return data_; }
  // nullptr on real hardware, where nothing tracks initialisation.
  uint8_t* shadow() const { return shadow_; }
  Dtype dtype() const { return dtype_; }
  Shape shape() const { return shape_; }
  int64_t count() const { return shape_.count(); }
  size_t bytes() const { return static_cast<size_t>(count()) * dtype_size(dtype_); }
  // Whether bytes back the buffer. The simulator models some buffers by size only (program
  // scenarios never read their data back): operations on them move no bytes.
  bool backed() const { return data_ != nullptr; }

  // Rows [first, first + n) as a buffer of the same dtype and width.
  Buffer rows(int64_t first, int64_t n) const;
  // Elements [first, first + n) of row `row`, as a one-column buffer.
  Buffer slice(int64_t row, int64_t first, int64_t n) const;
  // The same memory as one column of bytes (for byte-wise copies and checks).
  Buffer as_bytes() const { return Buffer(data_, shadow_, Dtype::u8, Shape{static_cast<int64_t>(bytes()), 1}); }

  // Host access for CPU kernels and tests (simulator only: the memory is host memory there).
  template <typename T>
  std::span<T> host() const {
    return {static_cast<T*>(data_), static_cast<size_t>(count())};
  }

  // Shadow bookkeeping: mark bytes written; count never-written elements.
  void mark_written(int64_t first_elem, int64_t n) const;
  void mark_all_written() const { mark_written(0, count()); }
  // Bytes [first, first + n): a collective that moved a byte prefix between buffers of two dtypes.
  void mark_bytes_written(size_t first, size_t n) const;
  int64_t uninitialised_elements(int64_t first_elem, int64_t n) const;

 private:
  void* data_ = nullptr;
  uint8_t* shadow_ = nullptr;
  Dtype dtype_ = Dtype::u8;
  Shape shape_{};
};

}  // namespace ppspec::core
