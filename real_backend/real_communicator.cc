#include "real_backend/real_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <fmt/format.h>
#include <stdexcept>

#include "core/all_to_all.h"
#include "real_backend/cuda_check.h"
#include "real_backend/real_device.h"
#include "real_backend/real_runtime.h"

namespace ppspec::real {
namespace {

ncclDataType_t nccl_type(core::Dtype d) {
  switch (d) {
    case core::Dtype::i8: return ncclInt8;
    case core::Dtype::u8: return ncclUint8;
    case core::Dtype::i32: return ncclInt32;
    case core::Dtype::u32: return ncclUint32;
    case core::Dtype::i64: return ncclInt64;
    case core::Dtype::u64: return ncclUint64;
    case core::Dtype::f16: return ncclFloat16;
    case core::Dtype::bf16: return ncclBfloat16;
    case core::Dtype::f32: return ncclFloat32;
    case core::Dtype::f64: return ncclFloat64;
  }
  return ncclUint8;
}

std::atomic<int64_t> g_next_op_id{0};

}  // namespace

RealCommunicator::RealCommunicator(RealRuntime& rt, RealDevice& dev, std::string name,
                                   std::vector<core::RankId> members, int crank, void* nccl_comm)
    : rt_(rt), dev_(dev), name_(std::move(name)), members_(std::move(members)), crank_(crank), comm_(nccl_comm) {}

// Communicators are not destroyed: ncclCommDestroy waits for outstanding work, and a run that
// hung ends the process with _exit instead.
RealCommunicator::~RealCommunicator() = default;

int64_t RealCommunicator::next_cseq(core::OpKind kind, int peer) {
  if (!core::is_p2p(kind)) return collectives_++;
  return p2p_[{peer, kind == core::OpKind::send ? 0 : 1}]++;
}

TrackedOp* RealCommunicator::track(core::OpKind kind, const core::Buffer& buf, int peer, core::Stream s,
                                   core::Label label) {
  // NCCL discards a collective of no elements before it takes a place in the communicator's order:
  // it is not an operation to pair, and nothing waits for it.
  if (!core::is_p2p(kind) && buf.count() == 0) return nullptr;
  const bool captured = dev_.capture_of(s) != nullptr;
  set_nccl_call_captured(captured);
  if (captured && rt_.group_state().depth > 0) rt_.group_state().captured = true;
  core::OpDesc desc;
  desc.kind = kind;
  desc.dtype = buf.dtype();
  desc.count = buf.count();
  desc.cols = buf.shape().cols;
  desc.peer = peer >= 0 ? members_.at(static_cast<size_t>(peer)) : -1;
  desc.label = label;
  if (std::vector<CapturedOp>* cap = dev_.capture_of(s)) {
    // R9: captured, not posted; each launch of the graph posts it.
    cap->push_back(CapturedOp{this, desc, std::string(label.name), peer});
    return nullptr;
  }
  auto op = std::make_unique<TrackedOp>();
  op->op_id = g_next_op_id++;
  op->rank = dev_.rank();
  op->comm = name_;
  op->actor = dev_.full_name(s);
  op->label = std::string(label.name);
  op->origin = std::string(rt_.call_site());
  op->desc = desc;
  op->cseq = next_cseq(kind, peer);
  op->group = rt_.group_state().depth > 0 ? rt_.group_state().id : -1;
  return rt_.tracker().add(std::move(op));
}

void* RealCommunicator::time_start(core::Stream s) {
  StepProfiler& p = rt_.profiler();
  if (!p.on() || rt_.current_step() < 0 || dev_.capture_of(s) != nullptr) return nullptr;
  void* st = dev_.cuda_stream(s);
  RealRuntime::GroupState& g = rt_.group_state();
  if (g.depth == 0) return p.begin(st);
  // In a group the operations run at ncclGroupEnd: one interval per stream, to the group's end.
  for (const auto& [stream, start] : g.timed)
    if (stream == st) return nullptr;
  g.timed.emplace_back(st, p.begin(st));
  return nullptr;
}

void RealCommunicator::finish(TrackedOp* op, core::Stream s, void* timed) {
  void* st = dev_.cuda_stream(s);
  if (timed != nullptr) rt_.profiler().end(dev_.rank(), rt_.current_step(), st, StepPart::communication, timed);
  if (op == nullptr) return;
  RealRuntime::GroupState& g = rt_.group_state();
  if (g.depth > 0) {
    g.ops.emplace_back(op, st);  // no stream operation may follow until group_end
    return;
  }
  auto done = std::make_shared<CompletionEvent>();
  cudaEvent_t ev;
  PPSPEC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  PPSPEC_CUDA(cudaEventRecord(ev, as_stream(st)));
  done->event = ev;
  done->rank = dev_.rank();
  rt_.tracker().attach({op}, done);
}

void RealCommunicator::post_replayed(const CapturedOp& c, core::Stream s, std::vector<TrackedOp*>& out) {
  auto op = std::make_unique<TrackedOp>();
  op->op_id = g_next_op_id++;
  op->rank = dev_.rank();
  op->comm = name_;
  op->actor = dev_.full_name(s);
  op->label = c.label;
  op->origin = std::string(rt_.call_site());
  op->desc = c.desc;
  op->desc.captured = true;
  op->cseq = next_cseq(c.desc.kind, c.peer);
  out.push_back(rt_.tracker().add(std::move(op)));
}

void RealCommunicator::send(const core::Buffer& buf, int peer, core::Stream s, core::Label label) {
  RealRuntime::CallScope scope(rt_, fmt::format("ncclSend to rank{} on '{}'", global_rank(peer), name_));
  TrackedOp* op = track(core::OpKind::send, buf, peer, s, label);
  void* timed = time_start(s);
  PPSPEC_NCCL(ncclSend(buf.data(), static_cast<size_t>(buf.count()), nccl_type(buf.dtype()), peer, as_comm(comm_),
                       as_stream(dev_.cuda_stream(s))));
  finish(op, s, timed);
}

void RealCommunicator::recv(const core::Buffer& buf, int peer, core::Stream s, core::Label label) {
  RealRuntime::CallScope scope(rt_, fmt::format("ncclRecv from rank{} on '{}'", global_rank(peer), name_));
  TrackedOp* op = track(core::OpKind::recv, buf, peer, s, label);
  void* timed = time_start(s);
  PPSPEC_NCCL(ncclRecv(buf.data(), static_cast<size_t>(buf.count()), nccl_type(buf.dtype()), peer, as_comm(comm_),
                       as_stream(dev_.cuda_stream(s))));
  finish(op, s, timed);
}

void RealCommunicator::broadcast(const core::Buffer& buf, int root, core::Stream s, core::Label label) {
  RealRuntime::CallScope scope(rt_, fmt::format("ncclBroadcast root rank{} on '{}'", global_rank(root), name_));
  TrackedOp* op = track(core::OpKind::broadcast, buf, root, s, label);
  void* timed = time_start(s);
  PPSPEC_NCCL(ncclBroadcast(buf.data(), buf.data(), static_cast<size_t>(buf.count()), nccl_type(buf.dtype()), root,
                            as_comm(comm_), as_stream(dev_.cuda_stream(s))));
  finish(op, s, timed);
}

void RealCommunicator::all_reduce(const core::Buffer& buf, core::ReduceOp, core::Stream s, core::Label label) {
  RealRuntime::CallScope scope(rt_, fmt::format("ncclAllReduce on '{}'", name_));
  TrackedOp* op = track(core::OpKind::all_reduce, buf, -1, s, label);
  void* timed = time_start(s);
  PPSPEC_NCCL(ncclAllReduce(buf.data(), buf.data(), static_cast<size_t>(buf.count()), nccl_type(buf.dtype()), ncclSum,
                            as_comm(comm_), as_stream(dev_.cuda_stream(s))));
  finish(op, s, timed);
}

void RealCommunicator::all_gather(const core::Buffer& send, const core::Buffer& recv, core::Stream s,
                                  core::Label label) {
  if (recv.count() < send.count() * size())
    throw std::invalid_argument(fmt::format("all_gather on '{}': receive buffer holds {} elements, needs {}", name_,
                                            recv.count(), send.count() * size()));
  RealRuntime::CallScope scope(rt_, fmt::format("ncclAllGather on '{}'", name_));
  TrackedOp* op = track(core::OpKind::all_gather, send, -1, s, label);
  void* timed = time_start(s);
  PPSPEC_NCCL(ncclAllGather(send.data(), recv.data(), static_cast<size_t>(send.count()), nccl_type(send.dtype()),
                            as_comm(comm_), as_stream(dev_.cuda_stream(s))));
  finish(op, s, timed);
}

// NCCL has no all-to-all call: PyTorch's all_to_all_single (ProcessGroupNCCL::alltoall_base ->
// torch::cuda::nccl::all2all_single_equal_split) posts one ncclSend and one ncclRecv per peer,
// itself included, inside ncclGroupStart/End on the stream. Nested in a caller's group, the
// inner group only joins it, as NCCL's groups nest.
void RealCommunicator::all_to_all(const core::Buffer& send, const core::Buffer& recv, core::Stream s,
                                  core::Label label) {
  if (std::string why = core::all_to_all_error(name_, send, recv, size()); !why.empty())
    throw std::invalid_argument(why);
  RealRuntime::CallScope scope(rt_, fmt::format("all_to_all (grouped ncclSend/ncclRecv) on '{}'", name_));
  TrackedOp* op = track(core::OpKind::all_to_all, send, -1, s, label);
  // Of no elements it takes no place in the order (as track() decides for every collective, and
  // the simulator too): nothing to move, so nothing is posted.
  if (send.count() == 0) return;
  void* timed = time_start(s);
  const auto chunk = static_cast<size_t>(send.count() / size());
  const size_t chunk_bytes = chunk * core::dtype_size(send.dtype());
  const auto* src = static_cast<const uint8_t*>(send.data());
  auto* dst = static_cast<uint8_t*>(recv.data());
  cudaStream_t st = as_stream(dev_.cuda_stream(s));
  PPSPEC_NCCL(ncclGroupStart());
  for (int peer = 0; peer < size(); ++peer) {
    const size_t off = static_cast<size_t>(peer) * chunk_bytes;
    PPSPEC_NCCL(ncclSend(src + off, chunk, nccl_type(send.dtype()), peer, as_comm(comm_), st));
    PPSPEC_NCCL(ncclRecv(dst + off, chunk, nccl_type(send.dtype()), peer, as_comm(comm_), st));
  }
  PPSPEC_NCCL(ncclGroupEnd());
  finish(op, s, timed);
}

}  // namespace ppspec::real
