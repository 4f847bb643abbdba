#include "sim/p2p_channel.h"
#include "core/assert.h"

#include <algorithm>
#include <cstring>

namespace ppspec::sim {

void P2PChannel::start_send(CommOp& op, int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied) {
  if (complete_if_empty(op, satisfied) || lose_if_wired_wrongly(op, satisfied)) return;
  UnitSource s;
  s.op = &op;
  s.data = static_cast<const uint8_t*>(op.spec.buf.data());
  s.shadow = op.spec.buf.shadow();
  s.bytes = op.spec.buf.bytes();
  s.units = op.units;
  s.start = op.kernel->start_clock;
  s.cseq = op.spec.cseq;
  sources_.push_back(std::move(s));
  progress(unit_bytes, eager_bytes, satisfied);
}

// A zero-byte send or receive carries no data and waits for no partner once the pair is connected
// (measured on H200, NCCL 2.28.9: zero-byte exchanges pass at first contact in either order, where
// 8 bytes hang; a zero-byte send nobody receives completes). It still takes its place in the
// channel's order (R3): pairing and misalignment see it.
bool P2PChannel::complete_if_empty(CommOp& op, std::vector<CommOp*>& satisfied) {
  if (op.spec.buf.bytes() != 0) return false;
  op.satisfied = true;
  satisfied.push_back(&op);
  return true;
}

// A send on a direction wired wrongly completes at once and its data never reaches the receiver
// (R4, PairSetup): its units never enter the FIFO.
bool P2PChannel::lose_if_wired_wrongly(CommOp& op, std::vector<CommOp*>& satisfied) {
  if (op.spec.receiver_ready) return false;
  op.lost = true;
  op.satisfied = true;
  satisfied.push_back(&op);
  return true;
}

void P2PChannel::start_recv(CommOp& op, int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied) {
  if (complete_if_empty(op, satisfied)) return;
  running_recvs_.push_back(&op);
  progress(unit_bytes, eager_bytes, satisfied);
}

void P2PChannel::retire(CommOp& op) {
  auto drop = [&op](std::deque<CommOp*>& q) {
    if (!q.empty() && q.front() == &op) {  // operations of one channel complete in order
      q.pop_front();
      return;
    }
    auto it = std::find(q.begin(), q.end(), &op);
    if (it != q.end()) q.erase(it);
  };
  drop(op.spec.desc.kind == core::OpKind::send ? live_sends : live_recvs);
}

void P2PChannel::progress(int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied) {
  const auto u = static_cast<size_t>(unit_bytes);
  while (!running_recvs_.empty() && !sources_.empty()) {
    CommOp& r = *running_recvs_.front();
    UnitSource& s = sources_.front();
    const int64_t n = std::min(r.units - r.units_done, s.units - s.units_done);
    PPSPEC_ASSERT(n > 0);
    // Units align on both sides, so the data of the moved units is one contiguous byte range.
    const size_t src_begin = static_cast<size_t>(s.units_done) * u;
    const size_t dst_begin = static_cast<size_t>(r.units_done) * u;
    const size_t src_end = std::min(static_cast<size_t>(s.units_done + n) * u, s.bytes);
    const size_t dst_end = std::min(static_cast<size_t>(r.units_done + n) * u, r.spec.buf.bytes());
    if (src_end > src_begin && dst_end > dst_begin && s.data != nullptr && r.spec.buf.backed()) {
      const size_t len = std::min(src_end - src_begin, dst_end - dst_begin);
      auto* dst = static_cast<uint8_t*>(r.spec.buf.data());
      std::memcpy(dst + dst_begin, s.data + src_begin, len);
      if (uint8_t* dsh = r.spec.buf.shadow()) {
        if (s.shadow)
          std::memcpy(dsh + dst_begin, s.shadow + src_begin, len);
        else
          std::memset(dsh + dst_begin, 1, len);
      }
    }
    s.units_done += n;
    r.units_done += n;
    // Happens-before: a receive completes after its send started; a send after its receive
    // started, unless it fits the connection buffer, where it may have been buffered (R4).
    r.release.join(s.start);
    const bool may_buffer = eager_bytes > 0 && static_cast<int64_t>(s.bytes) <= eager_bytes;
    if (s.op != nullptr && !may_buffer) s.op->release.join(r.kernel->start_clock);
    if (s.units_done == s.units) {
      if (s.op != nullptr) {
        s.op->satisfied = true;
        satisfied.push_back(s.op);
      } else {
        buffered_bytes_ -= static_cast<int64_t>(s.bytes);
      }
      sources_.pop_front();
    }
    if (r.units_done == r.units) {
      r.satisfied = true;
      satisfied.push_back(&r);
      running_recvs_.pop_front();
    }
  }
  // Sends still waiting may now fit in the connection buffer: they complete eagerly (R4; measured
  // on H200 with NCCL 2.28.9: an ungrouped send-first exchange passes at every size up to 64 MiB
  // once a grouped exchange wired the pair).
  for (UnitSource& s : sources_) {
    if (s.op == nullptr) continue;
    const bool early = s.op->spec.receiver_ready && buffered_bytes_ + static_cast<int64_t>(s.bytes) <= eager_bytes;
    if (!early) break;                                                     // later sends wait too: one FIFO
    if (s.data != nullptr) s.owned_data.assign(s.data, s.data + s.bytes);  // buffered by the connection
    if (s.shadow != nullptr) s.owned_shadow.assign(s.shadow, s.shadow + s.bytes);
    s.data = s.data != nullptr ? s.owned_data.data() : nullptr;
    s.shadow = s.shadow != nullptr ? s.owned_shadow.data() : nullptr;
    buffered_bytes_ += static_cast<int64_t>(s.bytes);
    s.op->satisfied = true;
    satisfied.push_back(s.op);
    s.op = nullptr;
  }
}

}  // namespace ppspec::sim
