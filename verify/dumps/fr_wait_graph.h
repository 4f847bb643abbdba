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

namespace ppspec::verify {

inline constexpr size_t kNoStuck = SIZE_MAX;

// One operation not completed.
struct Stuck {
  const FrOp* op = nullptr;
  int rank = -1;
  bool running = false;
  bool in_call = false;  // running only as far as its host is still inside the call that posted it
  size_t blocker = kNoStuck;  // queued: the stuck operation of its rank it waits behind; kNoStuck: outside communication
};

// What a running operation waits for.
struct Wait {
  // paired_elsewhere: the counterpart completed, paired with another operation (a mismatch): no wait;
  // group_mate: the counterpart completed and the operation waits for the rest of its coalesced group
  enum class Kind : uint8_t { queued, not_posted, no_dump, paired_elsewhere, group_mate } kind;
  size_t target = kNoStuck;  // queued: the partner's stuck operation
  int rank = -1;          // the partner
};

class WaitGraph {
 public:
  explicit WaitGraph(const FrJob& job);
  const FrJob& job;
  std::vector<Stuck> stuck;  // by (rank, record order)
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
  std::map<std::pair<int, size_t>, size_t> index_;  // (rank, order) -> stuck
};

}  // namespace ppspec::verify
