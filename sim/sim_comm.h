// One simulated communicator: its members and the positional state that pairing (R3), launch and
// execution share: the collective slots, the p2p channels and each member's issue counters.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "core/post_history.h"
#include "sim/comm_kernel.h"
#include "sim/p2p_channel.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimCommHandle;
class SimDevice;
class SimRuntime;

struct CollSlot {
  int posted = 0;
  int started = 0;
  int completed = 0;
  int first = -1;                 // the comm rank that posted first; -1 until one did
  int first_labelled = -1;        // the first comm rank whose post carries a label; -1: none yet
  std::vector<PostRecord> posts;  // by comm rank; op_id -1 until posted
  std::vector<CommOp*> ops;       // by comm rank: launched and not completed
  std::vector<int64_t> units;     // by comm rank; -1 until posted
  std::vector<uint8_t> launched;
  std::vector<uint8_t> done;
  VectorClock starts;  // the members' start clocks joined: every member's release (R4)
  // When a member first disagreed with the first poster (-1: none did). The report waits until
  // every member posted, to say who is the odd one out, and carries this time.
  Time mismatch_at = -1;
  uint64_t mismatch_step = 0;
};

// R5: what "the others" provide each member of a collective, in protocol units: the smallest
// contribution, or for the member that made it, the second smallest (INT64_MAX with one member).
struct OthersUnits {
  size_t lowest = 0;  // the member that contributes the fewest units
  int64_t lowest_units = INT64_MAX;
  int64_t second_units = INT64_MAX;

  int64_t for_member(size_t m) const { return m == lowest ? second_units : lowest_units; }
};
OthersUnits others_units(const std::vector<int64_t>& units);

struct CommRankState {
  uint64_t issued = 0;
  uint64_t completed = 0;
  std::deque<CommKernel*> live;  // issued and not completed, in issue order
  WaitList order_waiters;
  int64_t coll_posted = 0;
  core::PostHistory history;  // the collectives it posted, for judging a mismatch's cause
  bool initialised = false;
  VectorClock done_clock;  // the last completed kernel's: where the next one starts from (R2)
};

// Values for the pairs (a, b) of comm ranks that were ever used, made at first use: memory is
// O(members + pairs used), where n x n eagerly built channels cost 4 GB at 1,024 members. Iterates
// in (a, b) order, never address order. A one-entry memo per first rank keeps the hot path (a rank
// that talks to the same peer again) at an index and a compare instead of a tree walk.
template <typename T>
class PairMap {
 public:
  using Key = std::pair<int, int>;

  void reset(size_t members) { memo_.assign(members, Memo{}); }
  // The value for (a, b), and whether this call made it.
  std::pair<T&, bool> get(int a, int b) {
    PPSPEC_ASSERT(a >= 0 && static_cast<size_t>(a) < memo_.size());
    Memo& m = memo_[static_cast<size_t>(a)];
    if (m.value != nullptr && m.b == b) return {*m.value, false};
    auto [it, made] = map_.try_emplace(Key{a, b});
    m = Memo{b, &it->second};  // std::map nodes never move: the memo stays valid
    return {it->second, made};
  }
  const T* find(int a, int b) const {
    auto it = map_.find(Key{a, b});
    return it == map_.end() ? nullptr : &it->second;
  }
  size_t size() const { return map_.size(); }
  typename std::map<Key, T>::const_iterator begin() const { return map_.begin(); }
  typename std::map<Key, T>::const_iterator end() const { return map_.end(); }

 private:
  struct Memo {
    int b = -1;
    T* value = nullptr;
  };
  std::map<Key, T> map_;
  std::vector<Memo> memo_;  // by a
};

struct SimComm {
  int index = 0;  // declaration order: the communicator's place in CommSystem::comms()
  std::string name;
  std::vector<core::RankId> members;                      // global rank of each comm rank
  std::vector<std::pair<core::RankId, int>> crank_index;  // (global rank, comm rank), sorted
  std::vector<CommRankState> ranks;
  PairMap<P2PChannel> channels;  // (src, dst), made at the first post between them
  std::deque<CollSlot> slots;
  int64_t slot_base = 0;
  std::vector<std::unique_ptr<SimCommHandle>> handles;

  SimComm();
  ~SimComm();
  int size() const { return static_cast<int>(members.size()); }
  int crank_of(core::RankId r) const;  // -1 if `r` is not a member
  P2PChannel& channel(int src, int dst) { return channels.get(src, dst).first; }
  const P2PChannel* find_channel(int src, int dst) const { return channels.find(src, dst); }  // null: never used
  CollSlot* slot(int64_t k);                                                                  // null if already retired
  const CollSlot* find_slot(int64_t k) const;  // null if retired or not posted yet
};

// The device of member `crank` of `comm`.
SimDevice& member_device(const SimRuntime& rt, const SimComm& comm, int crank);

}  // namespace ppspec::sim
