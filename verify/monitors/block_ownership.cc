#include "verify/monitors/block_ownership.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/probes.h"

namespace ppspec::verify {

bool BlockOwnership::is_ledger(core::EventKind k) const {
  using K = core::EventKind;
  return k == K::blocks_allocated || k == K::blocks_freed || k == K::request_released || k == K::step_returned ||
         k == K::blocks_shared || k == K::blocks_cached;
}

std::string BlockOwnership::apply(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::blocks_allocated: return allocate(e);
    case core::EventKind::blocks_freed: return free(e);
    case core::EventKind::request_released: return release(e);
    case core::EventKind::blocks_shared: return share(e);
    case core::EventKind::blocks_cached: return cache(e);
    case core::EventKind::step_returned:
      returned_[e.step] = e.seq;
      while (returned_.size() > kReturnsKept) returned_.erase(returned_.begin());
      return "";
    default: return "";
  }
}

void BlockOwnership::set(int64_t block, const BlockHolder& h, uint64_t seq) {
  if (h.req < 0)
    held_.erase(block);
  else
    held_[block] = h;
  std::deque<Change>& changes = history_[block];
  changes.push_back(Change{seq, h});
  while (changes.size() > kHistoryKept) changes.pop_front();
}

std::string BlockOwnership::allocate(const core::Event& e) {
  const auto p = core::BlocksAllocatedProbe::decode(e);
  std::vector<int64_t>& table = tables_[e.req];
  unreleased_.emplace(e.req, e.step);
  std::string wrong;
  if (static_cast<size_t>(p.first_index) != table.size() && wrong.empty())
    wrong =
        fmt::format("the engine core appended blocks to request {}'s table at column {}, but the table has {} blocks",
                    e.req, p.first_index, table.size());
  for (int64_t b : p.blocks) {
    const BlockHolder now = holder(b);
    const auto shared = shares_.find(b);
    if (now.req >= 0 && wrong.empty())
      wrong = fmt::format("the engine core gave block {} to request {} at step {} while request {} still held it{}", b,
                          e.req, e.step, now.req, now.fenced ? " (fenced: a step of it was in flight)" : "");
    if (shared != shares_.end() && wrong.empty())
      wrong = fmt::format(
          "the engine core gave block {} to request {} at step {} while request {} still shared it through the "
          "prefix cache",
          b, e.req, e.step, shared->second.front().req);
    table.push_back(b);
    cached_.erase(b);  // given for new content: its hash is evicted
    set(b, BlockHolder{e.req, false, e.step, -1, core::Release::none}, e.seq);
  }
  return wrong;
}

std::string BlockOwnership::share(const core::Event& e) {
  const auto p = core::BlocksSharedProbe::decode(e);
  std::vector<int64_t>& table = tables_[e.req];
  unreleased_.emplace(e.req, e.step);
  std::string wrong;
  if (static_cast<size_t>(p.first_index) != table.size())
    wrong = fmt::format("the engine core gave request {} shared blocks at column {} of its table, which has {} blocks",
                        e.req, p.first_index, table.size());
  for (int64_t b : p.blocks) {
    if (!cached_.contains(b) && wrong.empty())
      wrong = fmt::format("request {} shares block {} at step {} through the prefix cache, but the block is not cached",
                          e.req, b, e.step);
    if (holds_unfenced(b, e.req) && wrong.empty())
      wrong = fmt::format("request {} shares block {} at step {}, which it already holds", e.req, b, e.step);
    table.push_back(b);
    shares_[b].push_back(BlockHolder{e.req, false, e.step, -1, core::Release::none, true});
  }
  return wrong;
}

std::string BlockOwnership::cache(const core::Event& e) {
  for (int64_t b : core::BlocksCachedProbe::decode(e).blocks) {
    const BlockHolder owner = holder(b);
    if (owner.req != e.req || owner.fenced)
      return fmt::format("the engine core cached block {} for request {} at step {}, but {}", b, e.req, e.step,
                         owner.req < 0 ? std::string("it was free") : fmt::format("request {} owned it", owner.req));
    if (const CachedBlock* c = cached(b))
      return fmt::format("the engine core cached block {} at step {}, which is cached since step {}", b, e.step,
                         c->step);
    cached_[b] = CachedBlock{e.step, e.req};
  }
  return "";
}

std::string BlockOwnership::free(const core::Event& e) {
  const auto p = core::BlocksFreedProbe::decode(e);
  std::string wrong;
  for (int64_t b : p.blocks) {
    const BlockHolder now = holder(b);
    // A request may hold a block twice: fenced from before a preemption, and shared again since
    // it resumed. Its steps return in order, so the fenced hold is the one freed first.
    if (now.req != e.req && drop_sharer(b, e.req)) continue;
    if (now.req != e.req && wrong.empty())
      wrong = fmt::format("the engine core freed block {} for request {} at step {}, but {}", b, e.req, e.step,
                          now.req < 0 ? std::string("it was free") : fmt::format("request {} held it", now.req));
    set(b, BlockHolder{-1, false, e.step, e.req, p.reason}, e.seq);
  }
  return wrong;
}

std::string BlockOwnership::release(const core::Event& e) {
  const auto p = core::RequestReleasedProbe::decode(e);
  tables_.erase(e.req);
  unreleased_.erase(e.req);
  released_at_[e.req] = e.step;
  for (int64_t b : p.fenced_blocks) {
    if (const auto s = shares_.find(b); s != shares_.end()) {
      const auto mine = std::find_if(s->second.begin(), s->second.end(),
                                     [&](const BlockHolder& h) { return h.req == e.req && !h.fenced; });
      if (mine != s->second.end()) {
        mine->fenced = true;
        continue;
      }
    }
    BlockHolder h = holder(b);
    if (h.req != e.req)
      return fmt::format("request {} was released with block {} fenced, which it did not hold", e.req, b);
    h.fenced = true;
    set(b, h, e.seq);
  }
  return "";
}

BlockHolder BlockOwnership::holder(int64_t block) const {
  const auto it = held_.find(block);
  if (it != held_.end()) return it->second;
  const auto h = history_.find(block);
  if (h == history_.end() || h->second.empty()) return {};
  return h->second.back().holder;  // free: who gave it back
}

const BlockHolder* BlockOwnership::sharer(int64_t block, int64_t req) const {
  const auto s = shares_.find(block);
  if (s == shares_.end()) return nullptr;
  for (const BlockHolder& h : s->second)
    if (h.req == req) return &h;
  return nullptr;
}

size_t BlockOwnership::sharers(int64_t block) const {
  const auto s = shares_.find(block);
  return s == shares_.end() ? 0 : s->second.size();
}

// One of `req`'s read-only holds on the block, a fenced one first.
bool BlockOwnership::drop_sharer(int64_t block, int64_t req) {
  const auto s = shares_.find(block);
  if (s == shares_.end()) return false;
  std::vector<BlockHolder>& h = s->second;
  auto it = std::find_if(h.begin(), h.end(), [req](const BlockHolder& x) { return x.req == req && x.fenced; });
  if (it == h.end()) it = std::find_if(h.begin(), h.end(), [req](const BlockHolder& x) { return x.req == req; });
  if (it == h.end()) return false;
  h.erase(it);
  if (h.empty()) shares_.erase(s);
  return true;
}

// Whether `req` holds the block for its present life: as its owner or a sharer, not fenced.
bool BlockOwnership::holds_unfenced(int64_t block, int64_t req) const {
  const BlockHolder owner = holder(block);
  if (owner.req == req && !owner.fenced) return true;
  const auto s = shares_.find(block);
  return s != shares_.end() && std::any_of(s->second.begin(), s->second.end(),
                                           [req](const BlockHolder& x) { return x.req == req && !x.fenced; });
}

const CachedBlock* BlockOwnership::cached(int64_t block) const {
  const auto c = cached_.find(block);
  return c == cached_.end() ? nullptr : &c->second;
}

size_t BlockOwnership::held_count() const {
  size_t n = held_.size();
  for (const auto& [block, holders] : shares_) n += held_.contains(block) ? 0 : 1;
  return n;
}

std::pair<int64_t, BlockHolder> BlockOwnership::first_held() const {
  PPSPEC_ASSERT(held_count() > 0, "no block is held");
  if (shares_.empty() || (!held_.empty() && held_.begin()->first <= shares_.begin()->first)) return *held_.begin();
  return {shares_.begin()->first, shares_.begin()->second.front()};
}

BlockHolder BlockOwnership::holder_at_return(int64_t block, int64_t step) const {
  const auto r = returned_.find(step);
  const auto h = history_.find(block);
  if (r == returned_.end() || h == history_.end() || h->second.empty() || h->second.front().seq > r->second)
    return holder(block);
  BlockHolder at = h->second.front().holder;
  for (const Change& c : h->second)
    if (c.seq <= r->second) at = c.holder;
  return at;
}

bool BlockOwnership::returned(int64_t step) const {
  return returned_.contains(step) || (!returned_.empty() && step < returned_.begin()->first);
}

int64_t BlockOwnership::released_at(int64_t req) const {
  const auto it = released_at_.find(req);
  return it == released_at_.end() ? -1 : it->second;
}

const std::vector<int64_t>* BlockOwnership::table(int64_t req) const {
  const auto it = tables_.find(req);
  return it == tables_.end() ? nullptr : &it->second;
}

}  // namespace ppspec::verify
