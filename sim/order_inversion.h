// Lockdep for communicators: two ranks that share two communicators must issue their common
// operations in the same relative order. An inversion deadlocks under `concurrency = "serial"` and
// is a hazard under "ok" (R7), even when this schedule happened to pass.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/op.h"
#include "core/types.h"
#include "core/verdict.h"

namespace ppspec::sim {

class OrderInversions {
 public:
  struct Participant {
    core::RankId rank;
    uint64_t issue_idx;       // the rank's communication-kernel issue order
    std::string_view actor;   // the stream it was issued to ("rank0.side")
    std::string_view origin;  // where the program issued it ("file.toml:12"), if known
    core::OpDesc op;          // its own operation: a recv is not its send (in words only if reported)
  };

  // Which rank pairs share two or more communicators; others are never recorded.
  void set_membership(int num_ranks, const std::vector<std::vector<core::RankId>>& comm_members,
                      std::vector<std::string> comm_names);
  bool enabled() const { return enabled_; }

  // A positional group (p2p pair or collective slot) on communicator `comm` is fully posted, and
  // its members agree: a mismatched pairing is a shift already reported, not an order of the program.
  void on_matched(int comm, int64_t cseq, std::span<const Participant> parts);

  // The first inversion, if any, as a hazard finding.
  std::optional<core::Finding> analyze() const;

 private:
  // Where one side of a recorded pairing was issued (views of the simulator's stable names).
  struct Where {
    std::string_view actor;
    std::string_view origin;
    core::OpDesc op;
  };
  struct Entry {
    uint64_t idx_a;
    uint64_t idx_b;
    int comm;
    int64_t cseq;
    Where at_a;
    Where at_b;
  };
  core::Finding inversion(size_t a, size_t b, const Entry& first, const Entry& second) const;
  core::Site site(size_t rank, const Entry& e, const Where& at) const;
  int num_ranks_ = 0;
  bool enabled_ = false;
  std::vector<uint8_t> share_two_;                                   // [a * n + b], a < b
  std::map<std::pair<size_t, size_t>, std::vector<Entry>> entries_;  // only pairs that matched: (a, b), a < b
  std::vector<std::string> comm_names_;
};

}  // namespace ppspec::sim
