// The waits of a hung job's stuck operations, from its Flight Recorder dumps (verify/dumps/fr_waits.h
// says how running and queued operations are told apart and what they wait for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "verify/dumps/fr_job.h"
#include "verify/dumps/fr_streams.h"

namespace ppspec::verify {

inline constexpr size_t kNoStuck = SIZE_MAX;

// Whether the operation belongs to its rank's last call: the last record, or the coalesced group
// the last record closes. Its host may still be inside that call.
bool in_last_call(const FrOp& op);

// One operation not completed.
struct Stuck {
  const FrOp* op = nullptr;
  int rank = -1;
  bool running = false;
  bool in_call = false;  // running only as far as its host is still inside the call that posted it
  size_t blocker =
      kNoStuck;  // queued: the stuck operation of its rank it waits behind; kNoStuck: outside communication
  // Its rank's ring dropped records and holds none of its completed calls before it: what it waits
  // behind may have been dropped, so where its rank is stuck is unknown.
  bool behind_dropped = false;
};

// What a running operation waits for.
struct Wait {
  // paired_elsewhere: the counterpart completed, paired with another operation (a mismatch): no wait;
  // group_mate: the counterpart completed and the operation waits for the rest of its coalesced group;
  // unplaced: the channel's sides could not be aligned (a wrapped ring): the counterpart is unknown;
  // unheld: the partner's ring dropped records and holds none of its calls there: whether it posted
  // the counterpart is unknown
  enum class Kind : uint8_t { queued, not_posted, no_dump, paired_elsewhere, group_mate, unplaced, unheld } kind;
  size_t target = kNoStuck;  // queued: the partner's stuck operation
  int rank = -1;             // the partner
};

class WaitGraph {
 public:
  WaitGraph(const FrJob& job, FrCalls calls);
  const FrJob& job;
  const FrCalls calls;
  std::vector<Stuck> stuck;              // by (rank, record order)
  std::vector<std::vector<Wait>> waits;  // by stuck operation
  std::map<int, std::vector<size_t>> by_rank;

  // A rank's stuck operations that run (or its first, if none is known to run).
  std::vector<size_t> where(int rank) const;
  std::string op_words(size_t i) const;

 private:
  void collect();
  void classify();
  void link();
  std::optional<size_t> find(int rank, size_t order) const;
  void partner(size_t i, int member, const FrOp* counterpart);
  // A counterpart the member's ring may have dropped: waits on where the member is, if unknown.
  bool dropped_counterpart(size_t i, int member);
  void classify_rank(int rank, const std::vector<const FrOp*>& ops);
  std::map<std::pair<int, size_t>, size_t> index_;  // (rank, order) -> stuck
  std::map<int, std::vector<const FrOp*>> calls_;   // every call of each rank, in record order
};

}  // namespace ppspec::verify
