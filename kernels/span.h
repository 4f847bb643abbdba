// A bounds-checked view of device memory, the only way a kernel touches a buffer. A kernel reads
// indices from memory (block tables, request indices, token ids), so an out-of-bounds access is a
// data bug, not a typo: on a GPU it is an illegal memory access that kills the job, in the
// simulator a silent heap overflow that may still say `pass`. Every access checks its index: on the
// host a failure throws KernelOutOfBounds (the run stops with an internal error naming the kernel),
// on the device it prints the index and traps, which the host sees as a launch failure.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/access.h"
#include "kernels/row.h"

#if defined(__CUDACC__)
#include <cstdio>
#endif

namespace ppspec::kernels {

class KernelOutOfBounds : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

PPSPEC_HD inline void out_of_bounds(int64_t first, int64_t n, int64_t size) {
#if defined(__CUDA_ARCH__)
  printf("ppspec kernel: elements [%lld, %lld) outside a buffer of %lld\n", static_cast<long long>(first),
         static_cast<long long>(first + n), static_cast<long long>(size));
  __trap();
#else
  throw KernelOutOfBounds(n == 1 ? "index " + std::to_string(first) + " outside [0, " + std::to_string(size) + ")"
                                 : "elements [" + std::to_string(first) + ", " + std::to_string(first + n) +
                                       ") outside [0, " + std::to_string(size) + ")");
#endif
}

template <typename T>
struct Span {
  T* data = nullptr;  // null: an optional argument that is absent
  int64_t size = 0;   // elements

  Span() = default;
  PPSPEC_HD Span(T* d, int64_t n) : data(d), size(n) {}
  // A Span<T> is a Span<const T>.
  template <typename U, typename = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  PPSPEC_HD Span(const Span<U>& other) : data(other.data), size(other.size) {}
#if !defined(__CUDACC__)
  // Host code and tests: a view of a whole container (std::vector, std::array).
  template <typename C, typename = decltype(std::declval<C&>().data() + std::declval<C&>().size())>
  Span(C& c) : data(c.data()), size(static_cast<int64_t>(c.size())) {}
#endif

  PPSPEC_HD bool present() const { return data != nullptr; }
  PPSPEC_HD T* begin() const { return data; }
  PPSPEC_HD T* end() const { return data + size; }
  PPSPEC_HD T& operator[](int64_t i) const {
    if (i < 0 || i >= size) out_of_bounds(i, 1, size);
#if !defined(__CUDA_ARCH__)
    if (t_access_observer != nullptr) t_access_observer->on_access(data + i, sizeof(T), !std::is_const_v<T>);
#endif
    return data[i];
  }
  // Elements [first, first + n) as one range access, for loops that walk raw pointers.
  PPSPEC_HD const T* read_range(int64_t first, int64_t n) const {
    const Span s = sub(first, n);
#if !defined(__CUDA_ARCH__)
    note_access(s.data, static_cast<size_t>(n) * sizeof(T), false);
#endif
    return s.data;
  }
  // Elements [first, first + n), checked once here.
  PPSPEC_HD Span sub(int64_t first, int64_t n) const {
    if (first < 0 || n < 0 || first + n > size) out_of_bounds(first, n, size);
    return Span(data + first, n);
  }
};

}  // namespace ppspec::kernels
