#include "verify/monitors/block_ownership.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "core/probes.h"

namespace ppspec::verify {

bool BlockOwnership::is_ledger(core::EventKind k) const {
  using K = core::EventKind;
  return k == K::blocks_allocated || k == K::blocks_freed || k == K::request_released || k == K::step_returned;
}

std::string BlockOwnership::apply(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::blocks_allocated: return allocate(e);
    case core::EventKind::blocks_freed: return free(e);
    case core::EventKind::request_released: return release(e);
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
    wrong = fmt::format("the engine core appended blocks to request {}'s table at column {}, but the table has {} blocks", e.req,
                        p.first_index, table.size());
  for (int64_t b : p.blocks) {
    const BlockHolder now = holder(b);
    if (now.req >= 0 && wrong.empty())
      wrong = fmt::format("the engine core gave block {} to request {} at step {} while request {} still held it{}", b, e.req, e.step,
                          now.req, now.fenced ? " (fenced: a step of it was in flight)" : "");
    table.push_back(b);
    set(b, BlockHolder{e.req, false, e.step, -1, core::Release::none}, e.seq);
  }
  return wrong;
}

std::string BlockOwnership::free(const core::Event& e) {
  const auto p = core::BlocksFreedProbe::decode(e);
  std::string wrong;
  for (int64_t b : p.blocks) {
    const BlockHolder now = holder(b);
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
  for (int64_t b : p.fenced_blocks) {
    BlockHolder h = holder(b);
    if (h.req != e.req) return fmt::format("request {} was released with block {} fenced, which it did not hold", e.req, b);
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

BlockHolder BlockOwnership::holder_at_return(int64_t block, int64_t step) const {
  const auto r = returned_.find(step);
  const auto h = history_.find(block);
  if (r == returned_.end() || h == history_.end() || h->second.empty() || h->second.front().seq > r->second) return holder(block);
  BlockHolder at = h->second.front().holder;
  for (const Change& c : h->second)
    if (c.seq <= r->second) at = c.holder;
  return at;
}

const std::vector<int64_t>* BlockOwnership::table(int64_t req) const {
  const auto it = tables_.find(req);
  return it == tables_.end() ? nullptr : &it->second;
}

}  // namespace ppspec::verify
