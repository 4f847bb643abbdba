#include "sim/collective_data.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ppspec::sim {

namespace {

template <typename T>
void sum_into(std::vector<T>& acc, const core::Buffer& b, int64_t n) {
  const T* p = static_cast<const T*>(b.data());
  for (int64_t i = 0; i < n; ++i) acc[static_cast<size_t>(i)] = static_cast<T>(acc[static_cast<size_t>(i)] + p[i]);
}

template <typename T>
void reduce_sum(const std::vector<CommOp*>& ops, int64_t n) {
  if (n <= 0 || !ops.front()->spec.buf.backed()) return;  // modelled by size only: no bytes to move
  std::vector<T> acc(static_cast<size_t>(n), T{});
  for (const CommOp* op : ops) sum_into<T>(acc, op->spec.buf, n);
  for (const CommOp* op : ops) std::memcpy(op->spec.buf.data(), acc.data(), static_cast<size_t>(n) * sizeof(T));
}

void copy_bytes(const core::Buffer& dst, size_t dst_off, const core::Buffer& src, size_t len, size_t src_off = 0) {
  if (len == 0 || !dst.backed() || !src.backed()) return;
  std::memcpy(static_cast<uint8_t*>(dst.data()) + dst_off, static_cast<const uint8_t*>(src.data()) + src_off, len);
  if (dst.shadow() != nullptr) {
    if (src.shadow() != nullptr)
      std::memcpy(dst.shadow() + dst_off, src.shadow() + src_off, len);
    else
      std::memset(dst.shadow() + dst_off, 1, len);
  }
}

// Member m's chunk d of `buf` lands in chunk m of member d's `buf2` (ops are in communicator-rank
// order). Chunks are cut from the smallest send buffer, so a count mismatch under
// on_mismatch = "emulate" moves what the smallest member holds, capped by each receive buffer.
void exchange_chunks(const std::vector<CommOp*>& ops, size_t min_bytes) {
  const size_t chunk = min_bytes / ops.size();
  for (size_t m = 0; m < ops.size(); ++m)
    for (size_t d = 0; d < ops.size(); ++d) {
      const core::Buffer& dst = ops[d]->spec.buf2;
      const size_t off = m * chunk;
      if (off < dst.bytes()) copy_bytes(dst, off, ops[m]->spec.buf, std::min(chunk, dst.bytes() - off), d * chunk);
    }
}

}  // namespace

void move_collective_data(const std::vector<CommOp*>& ops) {
  const core::OpDesc& d = ops.front()->spec.desc;
  size_t min_bytes = SIZE_MAX;
  for (const CommOp* op : ops) min_bytes = std::min(min_bytes, op->spec.buf.bytes());
  switch (d.kind) {
    case core::OpKind::broadcast: {
      const int root = ops.front()->spec.peer;
      const CommOp* src = ops[static_cast<size_t>(root)];
      for (const CommOp* op : ops)
        if (op != src) copy_bytes(op->spec.buf, 0, src->spec.buf, min_bytes);
      return;
    }
    case core::OpKind::all_reduce: {
      const auto n = static_cast<int64_t>(min_bytes / core::dtype_size(d.dtype));
      switch (d.dtype) {
        case core::Dtype::i8: reduce_sum<int8_t>(ops, n); break;
        case core::Dtype::u8: reduce_sum<uint8_t>(ops, n); break;
        case core::Dtype::i32: reduce_sum<int32_t>(ops, n); break;
        case core::Dtype::u32: reduce_sum<uint32_t>(ops, n); break;
        case core::Dtype::i64: reduce_sum<int64_t>(ops, n); break;
        case core::Dtype::u64: reduce_sum<uint64_t>(ops, n); break;
        case core::Dtype::f32: reduce_sum<float>(ops, n); break;
        case core::Dtype::f64: reduce_sum<double>(ops, n); break;
        case core::Dtype::f16:
        case core::Dtype::bf16:
          // No half-precision arithmetic in the simulator: every rank keeps rank 0's values.
          for (const CommOp* op : ops)
            if (op != ops.front()) copy_bytes(op->spec.buf, 0, ops.front()->spec.buf, min_bytes);
          break;
      }
      // Mismatched dtypes (on_mismatch = "emulate"): the byte prefix moved, counted in each buffer's own bytes.
      for (const CommOp* op : ops)
        op->spec.buf.mark_bytes_written(0, static_cast<size_t>(n) * core::dtype_size(d.dtype));
      return;
    }
    case core::OpKind::all_gather: {
      for (size_t m = 0; m < ops.size(); ++m)
        for (const CommOp* dst : ops) {
          const size_t cap = dst->spec.buf2.bytes();
          const size_t off = m * min_bytes;
          if (off < cap) copy_bytes(dst->spec.buf2, off, ops[m]->spec.buf, std::min(min_bytes, cap - off));
        }
      return;
    }
    case core::OpKind::all_to_all: exchange_chunks(ops, min_bytes); return;
    default: return;
  }
}

}  // namespace ppspec::sim
