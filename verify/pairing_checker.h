// Positional pairing over a stream of `op_posted` events: the k-th send A->B on a communicator with
// the k-th recv on B from A, and every member's k-th collective. Runs online (a sink of a GPU run,
// where NCCL itself notices nothing) and offline (a recorded trace).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/event.h"
#include "core/misalignment.h"
#include "core/verdict.h"

namespace ppspec::verify {

class PairingChecker final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;

  // Mismatched pairings, in the order they formed.
  const std::vector<core::Finding>& mismatches() const { return mismatches_; }
  // The first operation whose positional partner never came (a p2p partner, or a member of a
  // collective, counted from the comm_init events), if any.
  std::optional<core::Finding> unmatched() const;
  uint64_t pairs() const { return pairs_; }
  // Collective slots some member posted and not every member yet (bounded by what is in flight).
  size_t open_slots() const { return slot_posted_.size(); }

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
  core::PostedOp posted(const Rec& r) const;
  Rec record(const core::Event& e);

  using Channel = std::tuple<std::string, core::RankId, core::RankId>;  // comm, src, dst
  std::map<Channel, std::deque<Rec>> sends_;
  std::map<Channel, std::deque<Rec>> recvs_;
  std::map<Channel, int64_t> paired_;
  std::map<std::pair<std::string, int64_t>, Rec> slot_first_;
  std::map<std::pair<std::string, int64_t>, int> slot_posted_;
  std::map<std::string, int> members_;  // from comm_init events
  std::vector<core::Finding> mismatches_;
  uint64_t pairs_ = 0;
};

}  // namespace ppspec::verify
