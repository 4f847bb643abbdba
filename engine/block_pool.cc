#include "engine/block_pool.h"

#include "core/assert.h"
#include "core/hash.h"

namespace ppspec::engine {

BlockPool::BlockPool(int num_blocks, bool caching) : caching_(caching) {
  PPSPEC_ASSERT(num_blocks >= 2 && num_blocks <= (1 << 24), "{} KV blocks (2 to 2^24: the null block and one more)",
                num_blocks);
  const auto n = static_cast<size_t>(num_blocks);
  ref_.assign(n, 0);
  hash_.assign(n, kNoHash);
  prev_.assign(n, -1);
  next_.assign(n, -1);
  queued_.assign(n, 0);
  // vLLM's queue starts in block order; the stack gives block 1 first as well.
  if (caching_)
    for (int32_t b = 1; b < num_blocks; ++b) push_tail(b);
  else
    for (int32_t b = num_blocks - 1; b >= 1; --b) push_tail(b);
}

size_t BlockPool::checked(int32_t block) const {
  PPSPEC_ASSERT(block >= 1 && static_cast<size_t>(block) < ref_.size(), "block {} outside the pool's 1..{}", block,
                ref_.size() - 1);
  return static_cast<size_t>(block);
}

void BlockPool::push_tail(int32_t block) {
  const size_t b = checked(block);
  PPSPEC_ASSERT(queued_[b] == 0 && ref_[b] == 0, "block {} queued twice (held by {})", block, ref_[b]);
  prev_[b] = tail_;
  next_[b] = -1;
  if (tail_ >= 0)
    next_[static_cast<size_t>(tail_)] = block;
  else
    head_ = block;
  tail_ = block;
  queued_[b] = 1;
  ++free_count_;
}

void BlockPool::unlink(int32_t block) {
  const size_t b = checked(block);
  PPSPEC_ASSERT(queued_[b] != 0, "block {} is not in the free queue", block);
  if (prev_[b] >= 0)
    next_[static_cast<size_t>(prev_[b])] = next_[b];
  else
    head_ = next_[b];
  if (next_[b] >= 0)
    prev_[static_cast<size_t>(next_[b])] = prev_[b];
  else
    tail_ = prev_[b];
  prev_[b] = next_[b] = -1;
  queued_[b] = 0;
  --free_count_;
  PPSPEC_ASSERT(free_count_ >= 0 && free_count_ < num_blocks());
}

int32_t BlockPool::pop() {
  const int32_t b = caching_ ? head_ : tail_;
  PPSPEC_ASSERT(b >= 1, "the free queue is empty");
  unlink(b);
  return b;
}

void BlockPool::allocate(int n, std::vector<int32_t>& out) {
  PPSPEC_ASSERT(n >= 0 && n <= free_count_, "{} blocks asked of {} free", n, free_count_);
  for (int i = 0; i < n; ++i) {
    const int32_t b = pop();
    const size_t at = static_cast<size_t>(b);
    if (hash_[at] != kNoHash) {  // vLLM _maybe_evict_cached_block
      PPSPEC_ASSERT(table_.erase(hash_[at]) == 1, "block {} had a hash the table did not hold", b);
      hash_[at] = kNoHash;
      ++evictions_;
    }
    ref_[at] = 1;
    out.push_back(b);
  }
}

std::vector<int32_t> BlockPool::lookup(std::span<const uint64_t> hashes) const {
  std::vector<int32_t> hit;
  for (uint64_t h : hashes) {
    const auto it = table_.find(h);
    if (it == table_.end()) break;  // only a run of leading blocks is a prefix
    hit.push_back(it->second);
  }
  return hit;
}

int BlockPool::free_among(std::span<const int32_t> blocks) const {
  int n = 0;
  for (int32_t b : blocks) n += ref_[checked(b)] == 0 ? 1 : 0;
  return n;
}

void BlockPool::touch(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    const size_t at = checked(b);
    PPSPEC_ASSERT(hash_[at] != kNoHash, "block {} is touched as a prefix hit but is not cached", b);
    if (ref_[at] == 0) unlink(b);
    ++ref_[at];
    PPSPEC_ASSERT(ref_[at] <= num_blocks(), "block {} has {} holders", b, ref_[at]);
  }
}

void BlockPool::release(std::span<const int32_t> blocks) {
  auto one = [this](int32_t b) {
    const size_t at = checked(b);
    PPSPEC_ASSERT(ref_[at] > 0, "block {} released with no holder", b);
    if (--ref_[at] == 0) push_tail(b);
  };
  // vLLM frees a request's blocks tail first, so that its last blocks are evicted first.
  if (caching_)
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) one(*it);
  else
    for (int32_t b : blocks) one(b);
}

bool BlockPool::cache(int32_t block, uint64_t hash) {
  const size_t at = checked(block);
  PPSPEC_ASSERT(caching_ && hash != kNoHash && ref_[at] > 0 && hash_[at] == kNoHash,
                "block {} cached (holders {}, hash {})", block, ref_[at], hash_[at]);
  if (!table_.emplace(hash, block).second) return false;
  hash_[at] = hash;
  PPSPEC_ASSERT(table_.size() < ref_.size(), "{} cached blocks in a pool of {}", table_.size(), ref_.size());
  return true;
}

uint64_t BlockPool::block_hash(uint64_t parent, int64_t index, std::span<const int32_t> tokens) {
  std::vector<uint32_t> words{static_cast<uint32_t>(parent), static_cast<uint32_t>(parent >> 32),
                              static_cast<uint32_t>(index)};
  for (int32_t t : tokens) words.push_back(static_cast<uint32_t>(t));
  const uint64_t h = core::fnv1a_words(words.data(), words.size());
  return h == kNoHash ? 1 : h;  // kNoHash marks "not cached"
}

}  // namespace ppspec::engine
