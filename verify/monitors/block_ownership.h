// The engine core's KV blocks as its ledger probes tell them (core/probes.h: blocks_allocated,
// blocks_freed, request_released, step_returned, blocks_shared, blocks_cached): who holds each
// block — its one owner, the request it was given to fresh (running, or released with a step in
// flight that still stores through it: fenced), and, with prefix caching, the requests that share
// it read-only through a cache hit — which blocks are in the prefix cache since which step, each
// request's block table, and enough history to say who owned a block when a step's output
// returned. The KV ownership and leak monitors read it; it judges nothing itself, beyond the
// ledger's own consistency (a block given while held, shared while not cached, freed or cached by
// one who does not hold it).
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
  int64_t req = -1;     // -1: free
  bool fenced = false;  // released, held until its step in flight returns
  int64_t since_step = -1;
  // A free block: who gave it back, at which step, why.
  int64_t last_req = -1;
  core::Release reason = core::Release::none;
  bool shared = false;  // held read-only through a prefix-cache hit (since_step: the hit's)
};

// A block of the prefix cache: its content is final from the step after `step` on.
struct CachedBlock {
  int64_t step = -1;  // the step at whose schedule it entered the cache (the last one to store into it)
  int64_t req = -1;   // the request that computed it
};

class BlockOwnership {
 public:
  // Applies one ledger probe; other events are ignored. Returns what is inconsistent, or "".
  std::string apply(const core::Event& e);
  bool is_ledger(core::EventKind k) const;

  // The block's owner now; free, who gave it back.
  BlockHolder holder(int64_t block) const;
  // `req`'s read-only hold on a block it shares through the prefix cache; null when it has none.
  const BlockHolder* sharer(int64_t block, int64_t req) const;
  size_t sharers(int64_t block) const;
  // The block's place in the prefix cache; null when it is not cached (or was evicted since).
  const CachedBlock* cached(int64_t block) const;
  // Who held `block` when `step`'s output returned; now, when it has not returned (yet) or when it
  // returned before the history kept.
  BlockHolder holder_at_return(int64_t block, int64_t step) const;
  // Whether `step`'s output returned (steps return in the order they were scheduled; one older than
  // the history kept did).
  bool returned(int64_t step) const;
  // The step at whose schedule `req` was last released (finished, aborted or preempted: its blocks
  // freed or fenced); -1 when it never was.
  int64_t released_at(int64_t req) const;
  // The block table of a running request; null when it holds none.
  const std::vector<int64_t>* table(int64_t req) const;
  // How many blocks are held now (owned or shared), and the lowest of them with a holder: a free
  // block of the prefix cache is not held.
  size_t held_count() const;
  std::pair<int64_t, BlockHolder> first_held() const;
  // Requests admitted (they were given blocks) and not released since.
  const std::map<int64_t, int64_t>& unreleased() const { return unreleased_; }  // req -> first step

 private:
  void set(int64_t block, const BlockHolder& h, uint64_t seq);
  std::string allocate(const core::Event& e);
  std::string free(const core::Event& e);
  std::string release(const core::Event& e);
  std::string share(const core::Event& e);
  std::string cache(const core::Event& e);
  bool drop_sharer(int64_t block, int64_t req);  // whether `req` shared it
  bool holds_unfenced(int64_t block, int64_t req) const;

  static constexpr size_t kHistoryKept = 16;  // changes kept per block
  static constexpr size_t kReturnsKept = 64;  // steps whose return time is kept
  struct Change {
    uint64_t seq;
    BlockHolder holder;
  };
  std::map<int64_t, BlockHolder> held_;                 // by block: its owner
  std::map<int64_t, std::vector<BlockHolder>> shares_;  // by block: who shares it (prefix caching only)
  std::map<int64_t, CachedBlock> cached_;
  std::map<int64_t, std::deque<Change>> history_;
  std::map<int64_t, std::vector<int64_t>> tables_;
  std::map<int64_t, int64_t> unreleased_;
  std::map<int64_t, int64_t> released_at_;  // req -> the step of its last release (a key per request)
  std::map<int64_t, uint64_t> returned_;    // step -> the event seq of its return
};

}  // namespace ppspec::verify
