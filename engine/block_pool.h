// The engine core's KV blocks (vLLM v1 BlockPool + the prefix cache of kv_cache_utils.py): a fixed
// pool of `num_blocks` blocks, block 0 the null block that is never handed out, each with a
// reference count; the free ones (count 0) wait in a queue.
//
// Without prefix caching the queue is a stack, as the scheduler's free list always was: the block
// freed last is given first (every trace written before keeps its blocks). With prefix caching it
// is vLLM's least-recently-used queue: blocks are taken from its head and a request's freed blocks
// are appended to its tail in reverse block-table order, so that a request's tail blocks (the
// least shared: they hold the end of its own sequence) are evicted first.
//
// The prefix cache: a full block whose tokens are computed gets a hash chained over the request's
// blocks before it (hash(parent, index, tokens): its content and its position), and the hash table
// maps it to the block. A request's prompt that begins with cached blocks holds them too (touch:
// the count goes up, a free one leaves the queue). A free block keeps its hash, so it is still a
// hit until it is taken for new content, which evicts the hash. Hashes are FNV-1a over 32-bit
// words (core/hash.h): no addresses, nothing that varies between runs or machines.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace ppspec::engine {

class BlockPool {
 public:
  static constexpr uint64_t kNoHash = 0;  // the chain's parent of block 0; no block hashes to it

  BlockPool(int num_blocks, bool caching);

  bool caching() const { return caching_; }
  int num_blocks() const { return static_cast<int>(ref_.size()); }
  int free_count() const { return free_count_; }  // blocks with no holder, cached or not
  int ref_count(int32_t block) const { return ref_[checked(block)]; }
  bool is_cached(int32_t block) const { return hash_[checked(block)] != kNoHash; }
  int cached_count() const { return static_cast<int>(table_.size()); }
  int64_t evictions() const { return evictions_; }

  // `n` blocks from the free queue for a holder each (n <= free_count()); a cached one loses its
  // hash (evicted: its content is about to be overwritten).
  void allocate(int n, std::vector<int32_t>& out);
  // The prefix hit: the longest run of leading hashes whose blocks are cached, in order.
  std::vector<int32_t> lookup(std::span<const uint64_t> hashes) const;
  // How many of `blocks` are free now: taking them as a hit takes them out of the free queue.
  int free_among(std::span<const int32_t> blocks) const;
  // One more holder for each of `blocks` (cached blocks of a prefix hit).
  void touch(std::span<const int32_t> blocks);
  // One holder less for each of a request's blocks, in block-table order; those left with none
  // join the free queue, keeping their hashes.
  void release(std::span<const int32_t> blocks);
  // Makes a held, uncached block the cache's block for `hash`; false when another block already
  // holds that content (two requests computed it at once: the later one's copy stays uncached,
  // where vLLM would keep both).
  bool cache(int32_t block, uint64_t hash);

  // hash(parent, index, tokens) of one full block.
  static uint64_t block_hash(uint64_t parent, int64_t index, std::span<const int32_t> tokens);

 private:
  size_t checked(int32_t block) const;
  void push_tail(int32_t block);
  void unlink(int32_t block);
  int32_t pop();

  bool caching_;
  std::vector<int32_t> ref_;
  std::vector<uint64_t> hash_;
  // The free queue, a doubly linked list over block ids (-1: none), so that a hit takes a block
  // out of its middle at once.
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> queued_;
  int32_t head_ = -1, tail_ = -1;
  int free_count_ = 0;
  std::map<uint64_t, int32_t> table_;  // hash -> its block; at most one entry per block
  int64_t evictions_ = 0;
};

}  // namespace ppspec::engine
