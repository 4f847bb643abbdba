#include "watch/nccl_profiler/record.h"

#include <cstring>

namespace ppspec::nccl_profiler {
namespace {

struct FuncName {
  const char* nccl;
  Func func;
  const char* trace;
};
constexpr FuncName kFuncs[] = {
    {"Send", Func::send, "send"},
    {"Recv", Func::recv, "recv"},
    {"Broadcast", Func::broadcast, "broadcast"},
    {"AllReduce", Func::all_reduce, "all_reduce"},
    {"AllGather", Func::all_gather, "all_gather"},
    {"AlltoAll", Func::all_to_all, "all_to_all"},
    {"Reduce", Func::reduce, "reduce"},
    {"ReduceScatter", Func::reduce_scatter, "reduce_scatter"},
};

struct DatatypeName {
  const char* nccl;
  Datatype datatype;
  const char* trace;  // core::Dtype's name; fp8 travels as bytes (core has no fp8)
};
constexpr DatatypeName kDatatypes[] = {
    {"ncclInt8", Datatype::int8, "i8"},
    {"ncclUint8", Datatype::uint8, "u8"},
    {"ncclInt32", Datatype::int32, "i32"},
    {"ncclUint32", Datatype::uint32, "u32"},
    {"ncclInt64", Datatype::int64, "i64"},
    {"ncclUint64", Datatype::uint64, "u64"},
    {"ncclFloat16", Datatype::float16, "f16"},
    {"ncclFloat32", Datatype::float32, "f32"},
    {"ncclFloat64", Datatype::float64, "f64"},
    {"ncclBfloat16", Datatype::bfloat16, "bf16"},
    {"ncclFloat8e4m3", Datatype::float8e4m3, "f8e4m3"},
    {"ncclFloat8e5m2", Datatype::float8e5m2, "f8e5m2"},
};

}  // namespace

Func func_of(const char* nccl_name) {
  if (nccl_name == nullptr) return Func::other;
  for (const FuncName& f : kFuncs)
    if (std::strcmp(f.nccl, nccl_name) == 0) return f.func;
  return Func::other;
}

Datatype datatype_of(const char* nccl_name) {
  if (nccl_name == nullptr) return Datatype::unknown;
  for (const DatatypeName& d : kDatatypes)
    if (std::strcmp(d.nccl, nccl_name) == 0) return d.datatype;
  return Datatype::unknown;  // NCCL 2.28 names uint8 "Unknown" too
}

const char* trace_name(Func f) {
  for (const FuncName& n : kFuncs)
    if (n.func == f) return n.trace;
  return "other";
}

const char* trace_name(Datatype d) {
  for (const DatatypeName& n : kDatatypes)
    if (n.datatype == d) return n.trace;
  return "unknown";
}

bool is_p2p(Func f) { return f == Func::send || f == Func::recv; }
bool is_rooted(Func f) { return f == Func::broadcast || f == Func::reduce; }

}  // namespace ppspec::nccl_profiler
