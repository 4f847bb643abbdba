// A job as its Flight Recorder dumps show it: its process groups (from the dumps' group tables, not
// from which ranks happen to have entries — or, where a table is Gloo's placeholder, from the ranks
// whose dumps name the group), each member's collectives on each group in sequence order, and each
// (group, sender, receiver) channel's sends and receives at their places on the channel. What the
// checkers of verify/dumps/fr_*.cc read; built once, in time linear in the entries (plus their sort).
//
// PyTorch writes a coalesced group as its members, recorded without events (so `scheduled` for
// ever), and a closing record that carries the group's state and no sizes: `coalesced`,
// `ALLGATHER_coalesced` or `REDUCE_SCATTER_coalesced`. A group of p2p members puts each on its
// channel with the closer's state; a group of collectives is one collective of the group (one
// collective_seq_id: PyTorch counts a coalesced group once), compared member by member.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "traces/flight_recorder.h"

namespace ppspec::verify {

inline constexpr size_t kFrCoalescedMembersMax = 4096;  // members of one coalesced group looked back for

// One call of one rank's dump: a record, or a coalesced group of collectives (its closer, with its
// members).
struct FrOp {
  const traces::FrDump* dump = nullptr;
  const traces::FrEntry* entry = nullptr;  // the record; a coalesced group of collectives: its closer
  size_t group = 0;                        // index into FrJob::groups
  size_t order = 0;                        // its place in its rank's record order (entries[order] == *entry)
  int64_t position = -1;  // 0-based: collective number on the group, or the op's place on its p2p channel
  // The state that holds for it: its own, or, in a coalesced group, its closing record's.
  traces::FrState state = traces::FrState::scheduled;
  size_t coalesced = SIZE_MAX;  // the closing record's place in the rank's record order; SIZE_MAX: none
  std::vector<size_t> members;  // a coalesced group of collectives: its members' places, in record order

  bool composite() const { return !members.empty(); }
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
  bool inferred = false;         // members from the entries (Gloo's placeholder table)
  std::string label() const;     // "pg 1 (pp_broadcast)", or "pg 1" where PyTorch says "undefined"
};

struct FrChannel {
  size_t group = 0;
  int src = -1, dst = -1;  // global ranks
  // In order, each at its place on the channel (FrOp::position): from 0 where nothing of the
  // side's group was dropped from its ring; else from where its p2p calls, repeating in a pattern,
  // place it.
  std::vector<FrOp> sends, recvs;
  // Whether the two sides' places are known: false when a side's ring dropped p2p calls of the
  // group and its calls follow no pattern that tells how many of them were on this channel.
  bool aligned = true;
};

// Where a rank's p2p on one group was placed when its ring dropped some of it, for the report.
struct FrP2pPlacing {
  int rank = -1;
  size_t group = 0;
  int64_t first_seq = 0;  // the first p2p_seq_id its ring holds on the group
  size_t period = 0;      // its calls repeat every `period` calls; 0: they do not (its channels are not compared)
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
  // Whether every dump's states say what progressed (Gloo's never leave `scheduled`).
  bool progress = true;
  // Per rank, per record (entries[i]): the state that holds for it (FrOp::state).
  std::map<int, std::vector<traces::FrState>> states;
  std::vector<FrP2pPlacing> placings;  // the ranks and groups whose p2p places came from a pattern (or none)
};

FrJob make_job(const std::vector<traces::FrDump>& dumps);

// "broadcast i64 [4, 6]": what pairs by position and must agree; a coalesced group of collectives
// names its closer and lists its members. `with_op` false: the data only (a send and the receive it
// pairs with agree on that).
std::string describe(const FrOp& op, bool with_op = true);
std::string describe(const traces::FrEntry& e, bool with_op = true);
// What must agree across the members of a collective (or between a send and its receive), as a
// key: the operation and, per tensor, its dtype and element count (NCCL sees counts, not shapes:
// [4, 6] pairs with [6, 4]). What may differ legitimately is left out: an all_to_all's sizes (each
// rank's own totals of uneven splits), a gather's outputs and a scatter's inputs (the root's list,
// an undefined tensor elsewhere). `with_op` false: the data only.
std::string match_key(const FrOp& op, bool with_op = true);
// The elements an all_to_all sends and receives on its rank (inputs, outputs).
std::pair<int64_t, int64_t> all_to_all_totals(const traces::FrEntry& e);
// Where the entry is: "FILE record N", and its innermost frames outside torch.distributed.
std::string origin_of(const FrOp& op);
// The caller's Python frames outside torch.distributed, innermost first ("step_feedback at fr_cases.py:21").
std::vector<std::string> user_frames(const traces::FrEntry& e, size_t max);
// The records of a call: its members and closer, or the record alone.
std::vector<const traces::FrEntry*> records_of(const FrOp& op);

}  // namespace ppspec::verify
