#include "sim/comm_handle.h"

#include <fmt/format.h>
#include <stdexcept>

#include "core/all_to_all.h"
#include "sim/comm_system.h"
#include "sim/device.h"

namespace ppspec::sim {

void SimCommHandle::post(core::OpKind kind, const core::Buffer& buf, const core::Buffer& buf2, int peer, core::Stream s,
                         core::Label label, core::ReduceOp op) {
  SimDevice& dev = sys_.device_of(comm_, crank_);
  PartSpec spec;
  spec.comm = &comm_;
  spec.crank = crank_;
  spec.peer = peer;
  spec.desc.kind = kind;
  spec.desc.dtype = buf.dtype();
  spec.desc.count = buf.count();
  spec.desc.cols = buf.shape().cols;
  spec.desc.peer = peer >= 0 ? comm_.members.at(static_cast<size_t>(peer)) : -1;
  spec.desc.label = label;
  spec.reduce = op;
  spec.buf = buf;
  spec.buf2 = buf2;
  spec.stream = &dev.stream_impl(s);
  sys_.post(std::move(spec));
}

void SimCommHandle::send(const core::Buffer& buf, int peer, core::Stream s, core::Label label) {
  if (peer < 0 || peer >= size())  // a peer may be oneself: NCCL pairs self sends and receives in a group
    throw std::invalid_argument(fmt::format("send on '{}': bad peer {}", comm_.name, peer));
  post(core::OpKind::send, buf, {}, peer, s, label);
}

void SimCommHandle::recv(const core::Buffer& buf, int peer, core::Stream s, core::Label label) {
  if (peer < 0 || peer >= size())  // a peer may be oneself: NCCL pairs self sends and receives in a group
    throw std::invalid_argument(fmt::format("recv on '{}': bad peer {}", comm_.name, peer));
  post(core::OpKind::recv, buf, {}, peer, s, label);
}

void SimCommHandle::broadcast(const core::Buffer& buf, int root, core::Stream s, core::Label label) {
  if (root < 0 || root >= size())
    throw std::invalid_argument(fmt::format("broadcast on '{}': bad root {}", comm_.name, root));
  post(core::OpKind::broadcast, buf, {}, root, s, label);
}

void SimCommHandle::all_reduce(const core::Buffer& buf, core::ReduceOp op, core::Stream s, core::Label label) {
  post(core::OpKind::all_reduce, buf, {}, -1, s, label, op);
}

void SimCommHandle::all_gather(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) {
  if (recv.count() < send.count() * size())
    throw std::invalid_argument(fmt::format("all_gather on '{}': receive buffer holds {} elements, needs {}",
                                            comm_.name, recv.count(), send.count() * size()));
  post(core::OpKind::all_gather, send, recv, -1, s, label);
}

void SimCommHandle::all_to_all(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) {
  if (std::string why = core::all_to_all_error(comm_.name, send, recv, size()); !why.empty())
    throw std::invalid_argument(why);
  post(core::OpKind::all_to_all, send, recv, -1, s, label);
}

}  // namespace ppspec::sim
