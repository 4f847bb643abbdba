// The simulated NCCL: communicators, positional matching (R3), per-communicator serialisation
// (R2), cross-communicator concurrency (R7), completion (R4), mismatch (R5, R6), first-contact
// host blocking (R1) and graph-captured operations (R9).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "core/runtime.h"
#include "sim/comm_kernel.h"
#include "sim/order_inversion.h"
#include "sim/p2p_channel.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimRuntime;
class SimStream;
class SimDevice;
class CommSystem;

struct CollSlot {
  int posted = 0;
  int started = 0;
  int completed = 0;
  int first = -1;                  // the comm rank that posted first; -1 until one did
  int first_labelled = -1;         // the first comm rank whose post carries a label; -1: none yet
  std::vector<PostRecord> posts;   // by comm rank; op_id -1 until posted
  std::vector<CommOp*> ops;        // by comm rank: launched and not completed
  std::vector<int64_t> units;      // by comm rank; -1 until posted
  std::vector<uint8_t> launched;
  std::vector<uint8_t> done;
  VectorClock starts;  // the members' start clocks joined: every member's release (R4)
  // When a member first disagreed with the first poster (-1: none did). The report waits until
  // every member posted, to say who is the odd one out, and carries this time.
  Time mismatch_at = -1;
  uint64_t mismatch_step = 0;
};

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

// First contact (NCCL_RUNTIME_CONNECT=1): a connection exists once every party asked for it.
struct SimComm;

struct Connection {
  std::string what;
  const SimComm* comm = nullptr;  // whose connection
  bool p2p = false;               // a pair's (parties: the two), or the collectives' (parties: every member)
  std::vector<core::RankId> parties;
  std::vector<bool> arrived;
  size_t arrived_count = 0;  // of `arrived`, so that an arrival need not scan every party
  bool established = false;
  bool collecting = false;   // CommSystem::connect's mark while it gathers a call's connections
  WaitList waiters;
  VectorClock clock;         // the parties' clocks as they arrived: what each learns once established

  void arrive(size_t party) {
    PPSPEC_ASSERT(party < parties.size());
    if (arrived[party]) return;
    arrived[party] = true;
    ++arrived_count;
    PPSPEC_ASSERT(arrived_count <= parties.size());
  }
  bool all_arrived() const { return arrived_count == parties.size(); }
};

struct CommInit {
  std::vector<bool> arrived;
  int count = 0;
  WaitList waiters;
  VectorClock clock;  // as Connection::clock
};

class SimCommHandle;

// The setup of one pair's p2p connections (comm ranks a < b; side 0 is a). NCCL sets each end of a
// direction up at its first use, in a setup round (a bootstrap exchange) that meets the peer's
// next round, whatever the peer sets up in it: the k-th round of a pairs with the k-th round of b,
// and a host that starts a round waits for the peer's (R1). A direction is wired right only when
// its sender set its send end up in the same round as its receiver set its receive end up; data
// sent on a direction wired otherwise is lost (R4). Measured on H200 with NCCL 2.28.9: a send-first
// ungrouped exchange at first contact completes both sends and hangs both receives (faults from
// 1 MiB on), a one-way first contact and an exchange after a grouped one pass.
struct PairSetup {
  std::deque<Connection> rounds;   // round k; at most four: each side sets two ends up once
  int64_t started[2] = {0, 0};     // rounds each side started
  int64_t current[2] = {-1, -1};   // the round the side's call under way set up
  int64_t send_end[2] = {-1, -1};  // the round in which side s set its send end up; -1: not yet
  int64_t recv_end[2] = {-1, -1};
  bool collecting[2] = {false, false};  // CommSystem::connect's marks while it gathers a call's ends

  bool wired(int from_side) const { return send_end[from_side] >= 0 && send_end[from_side] == recv_end[1 - from_side]; }
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
  int index = 0;
  std::string name;
  std::vector<core::RankId> members;  // global rank of each comm rank
  std::vector<std::pair<core::RankId, int>> crank_index;  // (global rank, comm rank), sorted
  std::vector<CommRankState> ranks;
  PairMap<P2PChannel> channels;  // (src, dst), made at the first post between them
  std::deque<CollSlot> slots;
  int64_t slot_base = 0;
  Connection collective_conn;
  PairMap<PairSetup> p2p_setups;  // (min, max), made at first contact
  CommInit init;
  std::vector<std::unique_ptr<SimCommHandle>> handles;

  int size() const { return static_cast<int>(members.size()); }
  int crank_of(core::RankId r) const;  // -1 if `r` is not a member
  P2PChannel& channel(int src, int dst) { return channels.get(src, dst).first; }
  const P2PChannel* find_channel(int src, int dst) const { return channels.find(src, dst); }  // null: never used
  CollSlot* slot(int64_t k);  // null if already retired
  const CollSlot* find_slot(int64_t k) const;  // null if retired or not posted yet
  PairSetup& pair_setup(int a, int b);
  Connection& setup_round(int a, int b, int64_t k);  // round k of the pair, made when first needed
  bool wired(int src, int dst);                      // data sent src -> dst reaches dst (R4)
};

class SimCommHandle final : public core::Communicator {
 public:
  SimCommHandle(CommSystem& sys, SimComm& comm, int crank) : sys_(sys), comm_(comm), crank_(crank) {}
  std::string_view name() const override { return comm_.name; }
  int rank() const override { return crank_; }
  int size() const override { return comm_.size(); }
  core::RankId global_rank(int comm_rank) const override { return comm_.members.at(static_cast<size_t>(comm_rank)); }
  void send(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void recv(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void broadcast(const core::Buffer& buf, int root, core::Stream s, core::Label label) override;
  void all_reduce(const core::Buffer& buf, core::ReduceOp op, core::Stream s, core::Label label) override;
  void all_gather(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) override;

 private:
  void post(core::OpKind kind, const core::Buffer& buf, const core::Buffer& buf2, int peer, core::Stream s,
            core::Label label, core::ReduceOp op = core::ReduceOp::sum);
  CommSystem& sys_;
  SimComm& comm_;
  int crank_;
};

// Something a stuck communication kernel waits for, for the deadlock report.
struct Blocker {
  enum class Kind : uint8_t { stream, rank_host, none } kind = Kind::none;
  SimStream* stream = nullptr;
  core::RankId rank = -1;
  std::string what;
  const VectorClock* clock = nullptr;  // what has happened of the partner (its issue or start), if anything
  core::Culprit culprit{};  // rank_host, when the partner was never posted: that rank and the operation awaited
};

// What holds up one collective for the members that started it: the same for every waiting
// member, so a deadlock report asks once per collective instead of once per member (n^2 work for
// a stuck n-member collective).
struct CollectiveHold {
  const CollSlot* slot = nullptr;  // null: retired, nothing to explain
  std::vector<Blocker> members;    // one per member that has not posted, launched or started it
  size_t lowest = 0;               // the member that contributes the fewest units
  int64_t second_units = INT64_MAX;  // the second fewest units (INT64_MAX with one member)

  // The fewest units any member but `crank` contributes (R5).
  int64_t units_from_others(int crank) const;
};

class CommSystem {
 public:
  explicit CommSystem(SimRuntime& rt) : rt_(rt) {}

  SimComm& declare(std::string_view name, std::span<const core::RankId> members);
  SimComm* find(std::string_view name);
  const std::vector<std::unique_ptr<SimComm>>& comms() const { return comms_; }

  // Host calls.
  core::Communicator& init(SimComm& comm, core::RankId me);
  void post(PartSpec spec);
  void group_end_flush();                           // the calling actor's group ended
  void replay(const std::vector<PartSpec>& parts, SimStream& stream);  // a graph launch

  // The stream fiber reached a communication kernel.
  void execute(CommKernel& k, SimStream& s);

  // Explanations.
  Blocker p2p_blocker(const CommKernel& k, const CommOp& op) const;  // `op` is an unsatisfied send or recv of k
  CollectiveHold collective_hold(const SimComm& comm, int64_t cseq) const;
  // Why member `crank` spins when no member holds the collective up: it expects more (R5).
  Blocker size_mismatch(const CollectiveHold& hold, int crank) const;
  const CommKernel* order_blocker(const CommKernel& k) const;
  // What each unsatisfied part of `k` needs: its positional partners, with what has happened of
  // them (started: the start clock; posted, not started: the issue clock), or the rank that has
  // yet to post one (R8 hazards at the end of a deadlocked run, sim/blocking_hazards.h).
  std::vector<Blocker> release_blockers(const CommKernel& k) const;
  // A connection `absent` never reached: the operation the others wait at that it never posted.
  core::Culprit never_connected(const Connection& c, core::RankId absent) const;
  // Collective mismatches that some member never posted (the report waited for every member),
  // stamped when a member first disagreed, in that order; each is published as a note event, and
  // none is returned twice.
  std::vector<core::Finding> take_open_mismatches();
  bool has_open_mismatches() const { return !open_mismatches_.empty(); }
  // After a run that finished: the earliest posted p2p operation that never found its partner
  // (an eager send nobody received), as a finding.
  std::optional<core::Finding> unmatched() const;
  std::string describe(const CommOp& op) const;
  std::string describe_kernel(const CommKernel& k) const;

  SimDevice& device_of(const SimComm& comm, int crank) const;
  OrderInversions& inversions() { return inversions_; }
  bool mismatch_seen() const { return mismatch_seen_; }
  uint64_t ops_posted() const { return next_op_id_; }
  uint64_t pairs() const { return pairs_; }

 private:
  void register_post(PartSpec& spec);
  void on_pair(const PostRecord& send, const PostRecord& recv, SimComm& comm, int64_t cseq);
  void on_collective_post(const PostRecord& rec, int crank, SimComm& comm, int64_t cseq, CollSlot& slot);
  void on_slot_posted(const PostRecord& last, SimComm& comm, int64_t cseq, CollSlot& slot);
  core::Finding collective_finding(const SimComm& comm, int64_t cseq, const CollSlot& slot) const;
  void publish_mismatch(const core::Finding& f, core::RankId rank, std::string_view actor, const SimComm& comm, int64_t cseq);
  void connect(const std::vector<PartSpec>& parts);
  void reject_unmatched_self(const std::vector<PartSpec>& parts);
  Connection* join_setup_round(const PartSpec& p, std::vector<PairSetup*>& touched);
  void note_lost_send(const CommOp& op);
  bool connects_in_capture(const PartSpec& p) const;
  void reject_connect_in_capture(const std::vector<PartSpec>& parts);
  void launch(std::vector<PartSpec>& parts);  // empties `parts`
  CommKernel& new_kernel();
  void start_op(CommOp& op, std::vector<CommOp*>& satisfied);
  void start_collective(CommOp& op, std::vector<CommOp*>& satisfied);
  void complete(CommKernel& k);
  void start_clock(CommKernel& k, SimStream& primary);
  void check_races(const CommKernel& k, SimStream& primary);
  void on_satisfied(CommKernel& k);  // every part of k has its partners (R8 hazards: released)
  void watch_if_waiting(CommKernel& k);
  void depart(CommKernel& k);
  bool order_ok(const CommKernel& k) const;
  Time kernel_cost(const CommKernel& k) const;
  void emit(core::EventKind kind, const CommOp& op, std::string_view actor, int64_t value = -1);
  void emit_record(core::EventKind kind, const PostRecord& rec, const SimComm& comm, int64_t cseq, int64_t value);

  SimRuntime& rt_;
  std::vector<std::unique_ptr<SimComm>> comms_;
  std::deque<std::unique_ptr<CommKernel>> kernels_;
  std::vector<std::unique_ptr<CommKernel>> free_kernels_;
  std::vector<PairSetup*> setup_scratch_;  // connect()'s pairs of one call
  std::vector<uint64_t> rank_issue_;  // per global rank
  OrderInversions inversions_;
  int64_t next_op_id_ = 0;
  uint64_t pairs_ = 0;
  bool mismatch_seen_ = false;
  std::vector<std::pair<SimComm*, int64_t>> open_mismatches_;  // slots with a mismatch, not all posted
};

}  // namespace ppspec::sim
