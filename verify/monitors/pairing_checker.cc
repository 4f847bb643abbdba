#include "verify/monitors/pairing_checker.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::verify {

PairingChecker::Rec PairingChecker::record(const core::Event& e) {
  Rec r{e.op_id, e.op, e.rank, std::string(e.actor), std::string(e.op.label.name), std::string(e.text), e.seq};
  return r;
}

core::PostedOp PairingChecker::posted(const Rec& r) const {
  core::PostedOp p{r.op_id, r.desc, r.rank, r.actor, r.origin};
  p.desc.label.name = r.label;
  return p;
}

void PairingChecker::on_event(const core::Event& e) {
  if (e.kind == core::EventKind::comm_init) {
    Members& m = members_[std::string(e.comm)];
    if (auto at = std::lower_bound(m.ranks.begin(), m.ranks.end(), e.rank); at == m.ranks.end() || *at != e.rank)
      m.ranks.insert(at, e.rank);
    m.size = std::max({m.size, ++m.inits, static_cast<size_t>(std::max<int64_t>(e.value, 0))});
  }
  if (e.kind != core::EventKind::op_posted || !e.has_op) return;
  if (!core::is_p2p(e.op.kind)) {
    on_collective(e);
    return;
  }
  const std::string comm(e.comm);
  const bool is_send = e.op.kind == core::OpKind::send;
  const Channel ch{comm, is_send ? e.rank : e.op.peer, is_send ? e.op.peer : e.rank};
  auto& history = p2p_history_[ch];
  history[is_send ? 0 : 1].push(e.op);
  auto& mine = is_send ? sends_[ch] : recvs_[ch];
  auto& theirs = is_send ? recvs_[ch] : sends_[ch];
  Rec rec = record(e);
  // A channel queues the posts of one side at a time: a post of the other pairs with the oldest.
  PPSPEC_ASSERT(mine.empty() || theirs.empty(), "both sides of a p2p channel on '{}' are queued", comm);
  if (theirs.empty()) {
    mine.push_back(std::move(rec));
    return;
  }
  const Rec other = std::move(theirs.front());
  theirs.pop_front();
  const int64_t k = paired_[ch]++;
  ++pairs_;
  PPSPEC_ASSERT(other.desc.kind != e.op.kind && k >= 0);
  const Rec& send = is_send ? rec : other;
  const Rec& recv = is_send ? other : rec;
  if (auto f = core::misalignment(posted(send), posted(recv), comm, k, true)) {
    f->time = e.t;
    const core::PostHistory* lanes[2] = {&history[0], &history[1]};
    const core::RankId ranks[2] = {std::get<1>(ch), std::get<2>(ch)};
    core::name_cause(*f, core::mismatch_cause(lanes, ranks, k, comm, true));
    mismatches_.push_back(std::move(*f));
  }
}

void PairingChecker::on_collective(const core::Event& e) {
  const auto key = std::make_pair(std::string(e.comm), e.cseq);
  Slot& slot = slots_[key];
  slot.posts.push_back(record(e));
  coll_history_[key.first][e.rank].push(e.op);
  const core::OpDesc next = posted(slot.posts.back()).desc;
  if (slot.posts.size() > 1) {
    ++pairs_;
    const core::OpDesc first = posted(slot.posts.front()).desc;
    std::optional<core::OpDesc> labelled;
    if (slot.labelled >= 0) labelled = posted(slot.posts[static_cast<size_t>(slot.labelled)]).desc;
    if (slot.mismatch_at < 0 && core::disagrees(first, labelled ? &*labelled : nullptr, next)) slot.mismatch_at = e.t;
  }
  if (slot.labelled < 0 && !next.label.empty()) slot.labelled = static_cast<int>(slot.posts.size() - 1);
  PPSPEC_ASSERT(slot.labelled < static_cast<int>(slot.posts.size()) && (slot.mismatch_at < 0 || slot.posts.size() > 1));
  // A slot every member posted is closed: reported if its members disagree, then forgotten, so
  // that a long trace is checked in bounded memory.
  auto members = members_.find(key.first);
  if (members == members_.end() || slot.posts.size() < members->second.size) return;
  if (slot.mismatch_at >= 0) mismatches_.push_back(collective_finding(key.first, key.second, slot));
  slots_.erase(key);
}

core::Finding PairingChecker::collective_finding(const std::string& comm, int64_t cseq, const Slot& slot) const {
  PPSPEC_ASSERT(!slot.posts.empty() && slot.mismatch_at >= 0, "collective #{} on '{}' reported without a mismatch",
                cseq, comm);
  std::vector<core::PostedOp> posts;
  std::vector<core::RankId> missing;
  for (const Rec& r : slot.posts) posts.push_back(posted(r));
  // Without the comm_init events a trace does not say who else should have posted.
  size_t size = posts.size();
  if (auto members = members_.find(comm); members != members_.end()) {
    size = members->second.size;
    for (core::RankId m : members->second.ranks)
      if (std::none_of(slot.posts.begin(), slot.posts.end(), [m](const Rec& r) { return r.rank == m; }))
        missing.push_back(m);
  }
  std::optional<core::Finding> f = core::collective_misalignment(posts, size, missing, comm, cseq);
  PPSPEC_ASSERT(f.has_value(), "collective #{} on '{}' was marked mismatched and its posts agree", cseq, comm);
  const auto history = coll_history_.find(comm);
  if (history != coll_history_.end()) {
    std::vector<const core::PostHistory*> lanes;
    std::vector<core::RankId> ranks;
    for (const auto& [rank, h] : history->second) {
      ranks.push_back(rank);
      lanes.push_back(&h);
    }
    core::name_cause(*f, core::mismatch_cause(lanes, ranks, cseq, comm, false));
  }
  f->time = slot.mismatch_at;
  return std::move(*f);
}

std::vector<core::Finding> PairingChecker::open_mismatches() const {
  std::vector<core::Finding> out;
  for (const auto& [key, slot] : slots_)
    if (slot.mismatch_at >= 0) out.push_back(collective_finding(key.first, key.second, slot));
  std::stable_sort(out.begin(), out.end(),
                   [](const core::Finding& a, const core::Finding& b) { return a.time < b.time; });
  return out;
}

std::optional<core::Finding> PairingChecker::unmatched() const {
  const Rec* first = nullptr;
  const Channel* where = nullptr;
  for (const auto* side : {&sends_, &recvs_})
    for (const auto& [ch, q] : *side)
      if (!q.empty() && (first == nullptr || q.front().seq < first->seq)) {
        first = &q.front();
        where = &ch;
      }
  if (first == nullptr) {
    for (const auto& [key, slot] : slots_) {
      auto m = members_.find(key.first);
      // A mismatched slot is reported as such, with who has not posted it.
      if (m == members_.end() || slot.posts.size() >= m->second.size || slot.mismatch_at >= 0) continue;
      PPSPEC_ASSERT(!slot.posts.empty());
      const Rec& r = slot.posts.front();
      core::Finding f;
      f.verdict = core::Verdict::fifo_misalignment;
      f.kind = core::FindingKind::unmatched;
      f.summary = fmt::format("collective #{} on '{}' ({}) was posted by {} of its {} members only", key.second,
                              key.first, core::describe(posted(r).desc), slot.posts.size(), m->second.size);
      f.sites.push_back(core::Site{r.rank, r.actor, key.first, key.second, core::describe(posted(r).desc), r.origin});
      return f;
    }
    return std::nullopt;
  }
  PPSPEC_ASSERT(where != nullptr && core::is_p2p(first->desc.kind));
  const bool is_send = first->desc.kind == core::OpKind::send;
  const core::RankId partner = is_send ? std::get<2>(*where) : std::get<1>(*where);
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::unmatched;
  f.summary = fmt::format("rank{} posted {} on '{}' and rank{} never posted the matching {}", first->rank,
                          core::describe(posted(*first).desc), std::get<0>(*where), partner, is_send ? "recv" : "send");
  f.sites.push_back(core::Site{first->rank, first->actor, std::get<0>(*where), -1, core::describe(posted(*first).desc),
                               first->origin});
  const auto done = paired_.find(*where);
  f.culprit = core::Culprit{partner,
                            std::get<0>(*where),
                            true,
                            first->rank,
                            done == paired_.end() ? 0 : done->second,
                            core::Blame::never_posted};
  f.sites.push_back(core::Site{partner, "", std::get<0>(*where), -1, "never posts the matching operation", ""});
  return f;
}

}  // namespace ppspec::verify
