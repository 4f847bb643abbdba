// The view a kernel gets of a buffer: its elements as a bounds-checked kernels::Span, so that no
// index a kernel computes from memory can reach past the buffer (on a GPU: an illegal access).
#pragma once

#include "core/assert.h"
#include "core/buffer.h"
#include "kernels/span.h"

namespace ppspec::engine {

template <typename T>
kernels::Span<T> span_of(const core::Buffer& b) {
  PPSPEC_ASSERT(b.bytes() % sizeof(T) == 0, "a buffer of {} bytes viewed as elements of {} bytes", b.bytes(),
                sizeof(T));
  return kernels::Span<T>(static_cast<T*>(b.data()), static_cast<int64_t>(b.bytes() / sizeof(T)));
}

}  // namespace ppspec::engine
