// The engine core's KV blocks as its ledger probes tell them (core/probes.h: blocks_allocated,
// blocks_freed, request_released, step_returned): who holds each block — a running request, or a
// released one whose step in flight still stores through it (fenced) — each request's block
// table, and enough history to say who held a block when a step's output returned. The KV
// ownership and leak monitors read it; it judges nothing itself, beyond the ledger's own
// consistency (a block given while held, freed by one who does not hold it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/event_subjects.h"

namespace ppspec::verify {

struct BlockHolder {
  int64_t req = -1;      // -1: free
  bool fenced = false;   // released, held until its step in flight returns
  int64_t since_step = -1;
  // A free block: who gave it back, at which step, why.
  int64_t last_req = -1;
  core::Release reason = core::Release::none;
};

class BlockOwnership {
 public:
  // Applies one ledger probe; other events are ignored. Returns what is inconsistent, or "".
  std::string apply(const core::Event& e);
  bool is_ledger(core::EventKind k) const;

  BlockHolder holder(int64_t block) const;
  // Who held `block` when `step`'s output returned; now, when it has not returned (yet) or when it
  // returned before the history kept.
  BlockHolder holder_at_return(int64_t block, int64_t step) const;
  // The block table of a running request; null when it holds none.
  const std::vector<int64_t>* table(int64_t req) const;
  // Every block held now, by block.
  const std::map<int64_t, BlockHolder>& held() const { return held_; }
  // Requests admitted (they were given blocks) and not released since.
  const std::map<int64_t, int64_t>& unreleased() const { return unreleased_; }  // req -> first step

 private:
  void set(int64_t block, const BlockHolder& h, uint64_t seq);
  std::string allocate(const core::Event& e);
  std::string free(const core::Event& e);
  std::string release(const core::Event& e);

  static constexpr size_t kHistoryKept = 16;  // changes kept per block
  static constexpr size_t kReturnsKept = 64;  // steps whose return time is kept
  struct Change {
    uint64_t seq;
    BlockHolder holder;
  };
  std::map<int64_t, BlockHolder> held_;
  std::map<int64_t, std::deque<Change>> history_;
  std::map<int64_t, std::vector<int64_t>> tables_;
  std::map<int64_t, int64_t> unreleased_;
  std::map<int64_t, uint64_t> returned_;  // step -> the event seq of its return
};

}  // namespace ppspec::verify
