// KV ownership: every KV store a kernel makes for a request goes through a slot of a block that
// request holds, at the column of its block table that the position says (position / block_size)
// and the offset inside it (position % block_size). The evidence is the slot mapping each
// kernel stores through, read back (kv_slots probes: the target's layers, the drafter's context
// and query rows); who holds what is the engine core's ledger (verify/monitors/block_ownership.h).
//
// A store after the engine core gave the block away is judged by when the step returned: a rank
// that is still finishing a step whose output already returned stores before any later step of
// that rank does, so it is judged by who held the block at the return (and, when the request was
// preempted and admitted again since, not by its new block table); a store while the step is still
// in flight, into a block already given away, is the write-after-free of vLLM #49620.
//
// A store of a step still in flight into a block of its request is judged against the blocks the
// request held when the step was scheduled: under the lookahead batch the request may already hold
// blocks given for its next step, which no position of this step may reach.
//
// With prefix caching a block may be shared: the requests whose prefill hit it hold it read-only,
// and a store of theirs into it (from the hit's step on) is a finding; so is a store by its owner
// at a step after the one at which it entered the cache, whose content was final by then.
#pragma once

#include "core/probes.h"
#include "verify/monitors/block_ownership.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class KvOwnership final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;

 private:
  void check_row(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row);
  // The reports, formatted only when there is one to make.
  std::string whose(const BlockHolder& h) const;
  std::string where(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row) const;
  void report_out_of_table(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                           const std::vector<int64_t>* table);
  void report_not_held(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row, const BlockHolder& now,
                       const std::vector<int64_t>* table);
  void report_given_later(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                          const BlockHolder& now);
  std::string sharing(int64_t block) const;
  void report_shared(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row, int64_t hit_step);
  void report_cached(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row, const CachedBlock& c);
  void report_wrong_slot(const core::Event& e, core::KvWriter writer, const core::KvSlotRow& row,
                         const std::vector<int64_t>& table);

  BlockOwnership blocks_;
};

}  // namespace ppspec::verify
