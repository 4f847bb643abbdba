// Positional pairing over a stream of `op_posted` events: the k-th send A->B on a communicator with
// the k-th recv on B from A, and every member's k-th collective. Runs online (a sink of a GPU run,
// where NCCL itself notices nothing) and offline (a recorded trace).
#pragma once

#include <string_view>

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/event.h"
#include "core/misalignment.h"
#include "core/post_history.h"
#include "core/verdict.h"

namespace ppspec::verify {

class PairingChecker final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;

  // Mismatched pairings, in the order they were complete: a p2p pair when it formed, a
  // collective once every member posted it (so that the report can name the odd one out); each
  // stamped with the time of the event that first disagreed.
  const std::vector<core::Finding>& mismatches() const { return mismatches_; }
  // Mismatched collectives that some member has not posted (yet): their reports so far.
  std::vector<core::Finding> open_mismatches() const;
  // The first operation whose positional partner never came (a p2p partner, or a member of a
  // collective, counted from the comm_init events), if any.
  std::optional<core::Finding> unmatched() const;
  uint64_t pairs() const { return pairs_; }
  // Collective slots some member posted and not every member yet (bounded by what is in flight).
  size_t open_slots() const { return slots_.size(); }

 private:
  struct Rec {
    int64_t op_id;
    core::OpDesc desc;
    core::RankId rank;
    std::string actor;
    std::string label;
    std::string origin;
    uint64_t seq;
  };
  // One collective slot some member has not posted yet.
  struct Slot {
    std::vector<Rec> posts;       // in posting order
    int labelled = -1;            // the first post that carries a label; -1: none yet
    core::Time mismatch_at = -1;  // when a post first disagreed with those before it; -1: none did
  };
  core::PostedOp posted(const Rec& r) const;
  Rec record(const core::Event& e);
  void on_collective(const core::Event& e);
  core::Finding collective_finding(const std::string& comm, int64_t cseq, const Slot& slot) const;

  using Channel = std::tuple<std::string, core::RankId, core::RankId>;  // comm, src, dst
  std::map<Channel, std::deque<Rec>> sends_;
  std::map<Channel, std::deque<Rec>> recvs_;
  std::map<Channel, int64_t> paired_;
  std::map<std::pair<std::string, int64_t>, Slot> slots_;
  // What each member posted lately, for naming a mismatch's root cause (core/post_history.h).
  std::map<Channel, std::array<core::PostHistory, 2>> p2p_history_;                // sends, recvs
  std::map<std::string, std::map<core::RankId, core::PostHistory>> coll_history_;  // by comm, then rank
  // A communicator as its comm_init events tell: the members seen initialising it (sorted) and its
  // size (which each event carries; in traces that predate that, one event per member so far).
  struct Members {
    std::vector<core::RankId> ranks;
    size_t inits = 0;
    size_t size = 0;
  };
  std::map<std::string, Members> members_;
  std::vector<core::Finding> mismatches_;
  uint64_t pairs_ = 0;
};

}  // namespace ppspec::verify
