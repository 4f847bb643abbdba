// A job as its Flight Recorder dumps show it: its process groups (from the dumps' group tables, not
// from which ranks happen to have entries), each member's collectives on each group in sequence
// order, and each (group, sender, receiver) channel's sends and receives in p2p order. What the
// checkers of verify/dumps/fr_*.cc read; built once, in time linear in the entries (plus their sort).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "traces/flight_recorder.h"

namespace ppspec::verify {

// One entry of one rank's dump.
struct FrOp {
  const traces::FrDump* dump = nullptr;
  const traces::FrEntry* entry = nullptr;
  size_t group = 0;   // index into FrJob::groups
  size_t order = 0;   // its place in its rank's record order (entries[order] == *entry)
  int64_t position = -1;  // 0-based: collective number on the group, or k-th op on its p2p channel
  // The state that holds for it: its own, or, in a coalesced group (batch_isend_irecv, a
  // ncclGroupStart..End), its closing `coalesced` record's (PyTorch records no events for the
  // members, so theirs stay `scheduled`).
  traces::FrState state = traces::FrState::scheduled;
  size_t coalesced = SIZE_MAX;  // the closing record's place in the rank's record order; SIZE_MAX: none
};

struct FrJobGroup {
  std::string name;
  std::string desc;
  std::vector<int> ranks;  // global ranks, in group order
  // The members' collectives, by member (as `ranks`): in collective_seq_id order; a member without
  // a dump has an empty lane and `dumped` false.
  std::vector<std::vector<FrOp>> lanes;
  std::vector<bool> dumped;
  int64_t first_common_seq = 0;  // compared from here: the first sequence id every dumped member holds
  std::string label() const;     // "pg 1 (pp_broadcast)", or "pg 1" where PyTorch says "undefined"
};

struct FrChannel {
  size_t group = 0;
  int src = -1, dst = -1;  // global ranks
  std::vector<FrOp> sends, recvs;  // in p2p_seq_id order
};

struct FrJob {
  std::vector<const traces::FrDump*> dumps;  // by rank
  std::map<int, const traces::FrDump*> by_rank;
  std::vector<FrJobGroup> groups;
  std::vector<FrChannel> channels;  // in (group, src, dst) order
  std::vector<int> missing;         // members of some group in use without a dump, sorted
  // Per rank: how many records its ring buffer dropped before its first (its first record_id).
  std::map<int, int64_t> dropped;
  // Per rank: whether its dump records when operations started (TORCH_NCCL_ENABLE_TIMING): without
  // it an operation is `scheduled` until it completes.
  std::map<int, bool> timing;
  // Per rank, per record (entries[i]): the state that holds for it (FrOp::state).
  std::map<int, std::vector<traces::FrState>> states;
};

FrJob make_job(const std::vector<traces::FrDump>& dumps);

// "broadcast i64 [4, 6]": what pairs by position and must agree. `with_op` false: the data only
// (a send and the receive it pairs with agree on that).
std::string describe(const traces::FrEntry& e, bool with_op = true);
// What NCCL pairs on, as a key: the operation, and per tensor its dtype and element count (NCCL sees
// counts, not shapes: [4, 6] pairs with [6, 4]). `with_op` false: the data only.
std::string match_key(const traces::FrEntry& e, bool with_op = true);
// Where the entry is: "FILE record N", and its innermost frames outside torch.distributed.
std::string origin_of(const FrOp& op);
// The caller's Python frames outside torch.distributed, innermost first ("step_feedback at fr_cases.py:21").
std::vector<std::string> user_frames(const traces::FrEntry& e, size_t max);

}  // namespace ppspec::verify
