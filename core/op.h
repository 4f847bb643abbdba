// Descriptors of communication operations: what a rank asked its communicator to do.
// Pairing compares descriptors (R3, R5); reports and traces print them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/label.h"
#include "core/op_fields.h"
#include "core/types.h"

namespace ppspec::core {

// Appended only: the values before each are those older traces and tools know. reduce and
// reduce_scatter come from real jobs (the NCCL profiler plugin's traces): the simulator and the
// scenarios do not issue them, the pairing checks compare them like any other collective.
enum class OpKind : uint8_t { send, recv, broadcast, all_reduce, all_gather, all_to_all, reduce, reduce_scatter };

std::string_view to_string(OpKind k);
std::optional<OpKind> parse_op_kind(std::string_view s);
constexpr bool is_p2p(OpKind k) { return k == OpKind::send || k == OpKind::recv; }
// Collectives whose OpDesc::peer is their root.
constexpr bool has_root(OpKind k) { return k == OpKind::broadcast || k == OpKind::reduce; }

enum class ReduceOp : uint8_t { sum };

struct OpDesc {
  OpKind kind = OpKind::send;
  Dtype dtype = Dtype::u8;
  int64_t count = 0;  // elements (all_gather: elements contributed per rank; all_to_all: the whole send buffer)
  int64_t cols = 1;   // elements per row of the buffer: reports print [rows, cols] (pairing ignores it)
  RankId peer = -1;   // global rank: the peer of send/recv, the root of broadcast and reduce, -1 otherwise
  Label label{};
  bool captured = false;  // issued by a CUDA-graph replay (R9)

  size_t bytes() const { return static_cast<size_t>(count) * dtype_size(dtype); }
};

// "i64[2, 6]", "f32[1024]": the dtype and the rows and columns of the buffer (one dimension when
// it has one column, or its count is not a whole number of rows).
std::string shape_of(const OpDesc& d);

// "recv i32[256] from rank1 'feedback@step7'" — the words reports use for one operation.
std::string describe(const OpDesc& d);

// Why two positionally paired operations disagree, in words; empty when they agree.
// For p2p pairs `a` is the send and `b` the recv; for collectives they are two members' ops.
std::string mismatch_reason(const OpDesc& a, const OpDesc& b);
// The same as fields, for programs that judge a mismatch by what differs (`fidelity`: which fields
// a Flight Recorder entry or NCCL's profiler can see); none set when the two agree. Inline: every
// pairing of every run is judged by it.
[[gnu::always_inline]] inline OpFields mismatch_fields(const OpDesc& a, const OpDesc& b) {
  OpFields f;
  const bool p2p = is_p2p(a.kind) && is_p2p(b.kind);
  f.kind = !p2p && a.kind != b.kind;
  f.all_to_all = f.kind && (a.kind == OpKind::all_to_all || b.kind == OpKind::all_to_all);
  f.dtype = a.dtype != b.dtype;
  f.count = a.count != b.count;
  f.root = !p2p && a.kind == b.kind && has_root(a.kind) && a.peer != b.peer;
  // An unlabelled operation carries no claim about its purpose, so only two labels can disagree.
  f.label = !a.label.empty() && !b.label.empty() && !(a.label == b.label);
  f.capture = a.captured != b.captured;
  return f;
}

}  // namespace ppspec::core
