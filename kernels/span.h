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
  // The elements [memo_first, memo_end) that the access observer has recorded already for item
  // `memo_item` (kernels/access.h), in this view's mode: a write for Span<T>, a read for
  // Span<const T>; `memo_run`, the run that ends with them, if any. Host only, but in every build
  // so that a kernel's arguments have one layout.
  mutable int64_t memo_first = 0;
  mutable int64_t memo_end = 0;
  mutable uint64_t memo_item = 0;
  mutable uint32_t memo_run = 0;

  Span() = default;
  PPSPEC_HD Span(T* d, int64_t n) : data(d), size(n) {}
  // A Span<T> is a Span<const T> (what was checked as a write is checked for reads).
  template <typename U, typename = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  PPSPEC_HD Span(const Span<U>& other)
      : data(other.data),
        size(other.size),
        memo_first(other.memo_first),
        memo_end(other.memo_end),
        memo_item(other.memo_item),
        memo_run(other.memo_run) {}
#if !defined(__CUDACC__)
  // Host code and tests: a view of a whole container (std::vector, std::array).
  template <typename C, typename = decltype(std::declval<C&>().data() + std::declval<C&>().size())>
  Span(C& c) : data(c.data()), size(static_cast<int64_t>(c.size())) {}
#endif

  PPSPEC_HD bool present() const { return data != nullptr; }
  PPSPEC_HD T* begin() const { return data; }
  PPSPEC_HD T* end() const { return data + size; }
  PPSPEC_HD_ALWAYS_INLINE T& operator[](int64_t i) const {
    if (i < 0 || i >= size) out_of_bounds(i, 1, size);
#if !defined(__CUDA_ARCH__)
    if (t_access_observer != nullptr && !remembered(i, 1, !std::is_const_v<T>)) observe(i, 1, !std::is_const_v<T>);
#endif
    return data[i];
  }
  // Elements [first, first + n) as one range access, for loops that walk raw pointers.
  PPSPEC_HD const T* read_range(int64_t first, int64_t n) const {
    const Span s = sub(first, n);
#if !defined(__CUDA_ARCH__)
    if (t_access_observer != nullptr && n > 0 && !remembered(first, n, false)) observe(first, n, false);
#endif
    return s.data;
  }
  // Elements [first, first + n) as one write (a view of writable elements), for loops that walk
  // raw pointers: told once, and remembered like any write through this view.
  PPSPEC_HD T* write_range(int64_t first, int64_t n) const {
    static_assert(!std::is_const_v<T>, "a view of const elements cannot write");
    const Span s = sub(first, n);
#if !defined(__CUDA_ARCH__)
    if (t_access_observer != nullptr && n > 0 && !remembered(first, n, true)) observe(first, n, true);
#endif
    return s.data;
  }
  // The same elements again, in the same item, after read_range(first, n) read them through this
  // view: bounds-checked, not told again (the observer recorded exactly these bytes the first
  // time; a loop that walks a range once per chunk of its columns reads it this way after the first).
  PPSPEC_HD const T* reread_range(int64_t first, int64_t n) const { return sub(first, n).data; }
  // Elements [first, first + n) lie inside this view. A kernel that walks a row of a buffer through
  // the buffer's own view (not a sub-view) checks the row's bounds this way first: the view's memo
  // then carries from one row to the next, so the race detector is not told of each row afresh.
  PPSPEC_HD void check_range(int64_t first, int64_t n) const {
    if (first < 0 || n < 0 || first + n > size) out_of_bounds(first, n, size);
  }
  // Elements [first, first + n), checked once here; what this view remembers comes along.
  PPSPEC_HD Span sub(int64_t first, int64_t n) const {
    check_range(first, n);
    Span s(data + first, n);
    s.memo_first = memo_first - first;
    s.memo_end = memo_end - first;
    s.memo_item = memo_item;
    s.memo_run = memo_run;
    return s;
  }

 private:
#if !defined(__CUDA_ARCH__)
  // Elements [first, first + n), accessed `write`, are recorded already for the running item: in
  // this view's memo, or as the next ones of the run the memo ends with, which this extends.
  bool remembered(int64_t first, int64_t n, bool write) const {
    if (memo_item != t_access_item) return false;
    if (first >= memo_first && first + n <= memo_end) return true;
    if (first != memo_end || memo_run == 0 || write == std::is_const_v<T>) return false;
    AccessRun& run = t_access_runs[memo_run - 1];
    const auto* at = reinterpret_cast<const unsigned char*>(data + first);
    const auto* past = reinterpret_cast<const unsigned char*>(data + first + n);
    if (run.end != at || run.write != write || past > run.limit) return false;
    run.end = past;
    memo_end = first + n;
    return true;
  }
  // Tells the observer of elements [first, first + n) and remembers, of the bytes it answers, the
  // whole elements of this view: those it need not tell again during this item. A read of a
  // Span<T> (read_range) is told but not remembered: this view's memo stands for writes.
  [[gnu::noinline]] void observe(int64_t first, int64_t n, bool write) const {
    const CheckedBytes checked = t_access_observer->on_access(data + first, static_cast<size_t>(n) * sizeof(T), write);
    if (write != !std::is_const_v<T>) return;
    memo_item = 0;
    const auto base = reinterpret_cast<uintptr_t>(data);
    const auto begin = reinterpret_cast<uintptr_t>(checked.begin);
    const auto end = reinterpret_cast<uintptr_t>(checked.end);
    const auto element = static_cast<uintptr_t>(sizeof(T));
    if (begin > base + static_cast<uintptr_t>(first) * element ||
        end < base + static_cast<uintptr_t>(first + n) * element)
      return;
    memo_first = begin <= base ? 0 : static_cast<int64_t>((begin - base + element - 1) / element);
    memo_end =
        end >= base + static_cast<uintptr_t>(size) * element ? size : static_cast<int64_t>((end - base) / element);
    memo_item = t_access_item;
    // The run continues past this view's memo only if the memo reaches the run's end exactly.
    memo_run = end == base + static_cast<uintptr_t>(memo_end) * element ? checked.run : 0;
  }
#endif
};

// What a kernel's arguments cost (kernels/launch.h bounds them): a pointer, a size and the memo.
static_assert(sizeof(Span<int32_t>) == 48);

}  // namespace ppspec::kernels
