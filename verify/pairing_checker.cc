#include "verify/pairing_checker.h"

#include <fmt/format.h>

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
  if (e.kind == core::EventKind::comm_init) ++members_[std::string(e.comm)];
  if (e.kind != core::EventKind::op_posted || !e.has_op) return;
  const std::string comm(e.comm);
  if (core::is_p2p(e.op.kind)) {
    const bool is_send = e.op.kind == core::OpKind::send;
    const Channel ch{comm, is_send ? e.rank : e.op.peer, is_send ? e.op.peer : e.rank};
    auto& mine = is_send ? sends_[ch] : recvs_[ch];
    auto& theirs = is_send ? recvs_[ch] : sends_[ch];
    Rec rec = record(e);
    if (theirs.empty()) {
      mine.push_back(std::move(rec));
      return;
    }
    const Rec other = std::move(theirs.front());
    theirs.pop_front();
    const int64_t k = paired_[ch]++;
    ++pairs_;
    const Rec& send = is_send ? rec : other;
    const Rec& recv = is_send ? other : rec;
    if (auto f = core::misalignment(posted(send), posted(recv), comm, k, true)) mismatches_.push_back(std::move(*f));
    return;
  }
  const auto key = std::make_pair(comm, e.cseq);
  const int posted_now = ++slot_posted_[key];
  auto it = slot_first_.find(key);
  if (it == slot_first_.end()) {
    it = slot_first_.emplace(key, record(e)).first;
  } else {
    ++pairs_;
    if (auto f = core::misalignment(posted(it->second), posted(record(e)), comm, e.cseq, false))
      mismatches_.push_back(std::move(*f));
  }
  // A slot every member posted is closed: forget it, so a long trace is checked in bounded memory.
  auto members = members_.find(comm);
  if (members != members_.end() && posted_now >= members->second) {
    slot_first_.erase(it);
    slot_posted_.erase(key);
  }
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
    for (const auto& [key, n] : slot_posted_) {
      auto m = members_.find(key.first);
      if (m == members_.end() || n >= m->second) continue;
      const Rec& r = slot_first_.at(key);
      core::Finding f;
      f.verdict = core::Verdict::fifo_misalignment;
      f.kind = "unmatched";
      f.summary = fmt::format("collective #{} on '{}' ({}) was posted by {} of its {} members only", key.second, key.first,
                              core::describe(posted(r).desc), n, m->second);
      f.sites.push_back(core::Site{r.rank, r.actor, key.first, key.second, core::describe(posted(r).desc), r.origin});
      return f;
    }
    return std::nullopt;
  }
  const bool is_send = first->desc.kind == core::OpKind::send;
  const core::RankId partner = is_send ? std::get<2>(*where) : std::get<1>(*where);
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = "unmatched";
  f.summary = fmt::format("rank{} posted {} on '{}' and rank{} never posted the matching {}", first->rank,
                          core::describe(posted(*first).desc), std::get<0>(*where), partner, is_send ? "recv" : "send");
  f.sites.push_back(core::Site{first->rank, first->actor, std::get<0>(*where), -1, core::describe(posted(*first).desc), first->origin});
  f.sites.push_back(core::Site{partner, "", std::get<0>(*where), -1, "never posts the matching operation", ""});
  return f;
}

}  // namespace ppspec::verify
