// One direction of one point-to-point connection (communicator C, rank src -> rank dst). NCCL keeps
// a FIFO per peer and matches the k-th send with the k-th recv by position alone (R3). Data moves in
// protocol units (R5): a recv completes once it has consumed units(its bytes), a send once all its
// units were consumed or fit in the eager buffer (R4). Surplus units stay queued for the next recv.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/assert.h"
#include "core/op.h"
#include "sim/comm_kernel.h"
#include "core/post_history.h"

namespace ppspec::sim {

// The facts about a posted operation that pairing and reports need, copied so that they outlive it.
struct PostRecord {
  int64_t op_id = -1;
  core::OpDesc desc;
  core::RankId rank = -1;
  std::string_view actor;
  std::string_view origin;
  uint64_t issue_idx = 0;
  int64_t group = -1;  // the host thread's ncclGroupStart..End it was posted in; -1: none
};

// Units a send offers: a running send op, or data an eager send left in the connection buffer.
struct UnitSource {
  CommOp* op = nullptr;  // null once buffered
  const uint8_t* data = nullptr;
  const uint8_t* shadow = nullptr;
  size_t bytes = 0;
  int64_t units = 0;
  int64_t units_done = 0;
  std::vector<uint8_t> owned_data;  // buffered copy
  std::vector<uint8_t> owned_shadow;
  VectorClock start;  // the send kernel's start clock: what its receivers learn (R8 hazards)
  int64_t cseq = -1;  // the send's position on the channel
};

class P2PChannel {
 public:
  int64_t sends_posted = 0;
  int64_t recvs_posted = 0;
  std::deque<PostRecord> unpaired_sends;  // posted, positional partner not posted yet
  std::deque<PostRecord> unpaired_recvs;
  core::PostHistory send_history;  // what was posted, for judging a mismatch's cause (core/post_history.h)
  core::PostHistory recv_history;
  std::deque<CommOp*> live_sends;  // launched and not completed, in order
  std::deque<CommOp*> live_recvs;

  // A send or recv kernel part became resident. Returns ops newly satisfied (to wake).
  void start_send(CommOp& op, int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied);
  void start_recv(CommOp& op, int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied);
  void retire(CommOp& op);  // op completed: drop it from the live lists

  // For explanations: the send whose units the head recv waits for, if launched.
  const std::deque<UnitSource>& sources() const { return sources_; }
  const std::deque<CommOp*>& running_recvs() const { return running_recvs_; }

 private:
  void progress(int64_t unit_bytes, int64_t eager_bytes, std::vector<CommOp*>& satisfied);
  static bool complete_if_empty(CommOp& op, std::vector<CommOp*>& satisfied);
  static bool lose_if_wired_wrongly(CommOp& op, std::vector<CommOp*>& satisfied);

  std::deque<UnitSource> sources_;
  std::deque<CommOp*> running_recvs_;
  int64_t buffered_bytes_ = 0;
};

// A posted send's or recv's channel: posting found it (sim/comm_pairing.cc).
inline P2PChannel& p2p_channel(const CommOp& op) {
  PPSPEC_ASSERT(op.spec.channel != nullptr, "a p2p part launched without being posted");
  return *op.spec.channel;
}

inline int64_t units_of(size_t bytes, int64_t unit_bytes) {
  // A zero-byte operation still runs one (empty) protocol step and needs its partner.
  const auto u = static_cast<size_t>(unit_bytes);
  return bytes == 0 ? 1 : static_cast<int64_t>((bytes + u - 1) / u);
}

}  // namespace ppspec::sim
