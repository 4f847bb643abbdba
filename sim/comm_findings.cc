#include "sim/comm_findings.h"

#include <algorithm>
#include <fmt/format.h>
#include <string>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "core/misalignment.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

namespace {

core::PostedOp posted_op(const PostRecord& r) { return core::PostedOp{r.op_id, r.desc, r.rank, r.actor, r.origin}; }

}  // namespace

void CommFindings::judge_pair(const PostRecord& send, const PostRecord& recv, const SimComm& comm, int64_t cseq) {
  World& w = rt_.world();
  std::optional<core::Finding> found = core::misalignment(posted_op(send), posted_op(recv), comm.name, cseq, true);
  if (!found) return;
  mismatch_seen_ = true;
  {
    const P2PChannel& ch = *comm.find_channel(comm.crank_of(send.rank), comm.crank_of(recv.rank));
    const core::PostHistory* lanes[2] = {&ch.send_history, &ch.recv_history};
    const core::RankId ranks[2] = {send.rank, recv.rank};
    core::name_cause(*found, core::mismatch_cause(lanes, ranks, cseq, comm.name, true));
  }
  publish_mismatch(*found, recv.rank, recv.actor, comm, cseq);
  if (w.config().on_mismatch == core::OnMismatch::report) w.stop(std::move(*found));
  w.note(std::move(*found));
}

void CommFindings::judge_collective_post(const PostRecord& rec, SimComm& comm, int64_t cseq, CollSlot& slot) {
  PPSPEC_ASSERT(slot.first >= 0 && slot.posted <= comm.size());
  if (slot.mismatch_at >= 0 ||
      !core::disagrees(slot.posts[static_cast<size_t>(slot.first)].desc,
                       slot.first_labelled < 0 ? nullptr : &slot.posts[static_cast<size_t>(slot.first_labelled)].desc,
                       rec.desc))
    return;
  World& w = rt_.world();
  slot.mismatch_at = w.now();
  slot.mismatch_step = w.steps();
  mismatch_seen_ = true;
  if (slot.posted < comm.size()) open_mismatches_.emplace_back(&comm, cseq);
}

void CommFindings::report_collective(const PostRecord& last, SimComm& comm, int64_t cseq, const CollSlot& slot) {
  PPSPEC_ASSERT(slot.posted == comm.size());
  if (slot.mismatch_at < 0) return;
  World& w = rt_.world();
  std::erase(open_mismatches_, std::pair<SimComm*, int64_t>{&comm, cseq});
  core::Finding f = collective_finding(comm, cseq, slot);
  publish_mismatch(f, last.rank, last.actor, comm, cseq);
  if (w.config().on_mismatch == core::OnMismatch::report) w.stop_stamped(std::move(f));
  w.note_stamped(std::move(f));
}

core::Finding CommFindings::collective_finding(const SimComm& comm, int64_t cseq, const CollSlot& slot) const {
  // The first poster first: with two members the report pairs it with the other, as NCCL does.
  std::vector<core::PostedOp> posts{posted_op(slot.posts[static_cast<size_t>(slot.first)])};
  std::vector<core::RankId> missing;
  for (size_t m = 0; m < slot.posts.size(); ++m) {
    if (slot.posts[m].op_id < 0)
      missing.push_back(comm.members[m]);
    else if (static_cast<int>(m) != slot.first)
      posts.push_back(posted_op(slot.posts[m]));
  }
  std::optional<core::Finding> f = core::collective_misalignment(posts, comm.members.size(), missing, comm.name, cseq);
  PPSPEC_ASSERT(f.has_value(), "collective #{} on '{}' was marked mismatched and its posts agree", cseq, comm.name);
  {
    std::vector<const core::PostHistory*> lanes;
    for (const CommRankState& rs : comm.ranks) lanes.push_back(&rs.history);
    core::name_cause(*f, core::mismatch_cause(lanes, comm.members, cseq, comm.name, false));
  }
  f->time = slot.mismatch_at;
  f->sched_step = slot.mismatch_step;
  return std::move(*f);
}

std::vector<core::Finding> CommFindings::take_open_mismatches() {
  std::vector<core::Finding> out;
  for (const auto& [comm, cseq] : open_mismatches_) {
    const CollSlot* slot = comm->find_slot(cseq);
    PPSPEC_ASSERT(slot != nullptr, "an open mismatch's slot #{} on '{}' retired", cseq, comm->name);
    PPSPEC_ASSERT(slot->posted < comm->size(), "an open mismatch's slot #{} on '{}' is fully posted", cseq, comm->name);
    out.push_back(collective_finding(*comm, cseq, *slot));
    const PostRecord& first = slot->posts[static_cast<size_t>(slot->first)];
    publish_mismatch(out.back(), first.rank, first.actor, *comm, cseq);
  }
  open_mismatches_.clear();
  return out;
}

// A mismatch goes into the event stream where it was found, so that a trace shows it in place.
void CommFindings::publish_mismatch(const core::Finding& f, core::RankId rank, std::string_view actor,
                                    const SimComm& comm, int64_t cseq) {
  World& w = rt_.world();
  if (!w.bus().active()) return;
  core::Event e = w.event(core::EventKind::note, rank, actor);
  e.comm = comm.name;
  e.cseq = cseq;
  e.text = f.summary;
  w.bus().publish(e);
}

// A send on a direction wired wrongly (PairSetup): it completes, and its data is gone; the receive
// that pairs with it waits for data that never comes (R4). Noted where it happens, for the report.
void CommFindings::note_lost_send(const CommOp& op) {
  World& w = rt_.world();
  const SimComm& comm = *op.spec.comm;
  const core::RankId src = comm.members[static_cast<size_t>(op.spec.crank)];
  const core::RankId dst = comm.members[static_cast<size_t>(op.spec.peer)];
  core::Finding f;
  f.kind = core::FindingKind::p2p_data_lost;
  f.time = w.now();
  f.summary = fmt::format(
      "rank{}'s {} on '{}' #{} went to a connection wired wrongly: rank{} set its send end up in another setup round "
      "than rank{} its receive end (an ungrouped send at first contact, or a zero-byte exchange, before any receive "
      "from rank{}); its data is lost and the receive that pairs with it never completes (R4; measured on H200, NCCL "
      "2.28.9: hangs, and from 1 MiB on the device faults). Connect the pair with one grouped exchange first",
      src, core::describe(op.spec.desc), comm.name, op.spec.cseq, src, dst, src);
  f.sites.push_back(core::Site{src, op.spec.stream->full_name(), comm.name, op.spec.cseq, core::describe(op.spec.desc),
                               std::string(op.spec.origin)});
  w.note(std::move(f));
}

std::optional<core::Finding> CommFindings::unmatched(const std::vector<std::unique_ptr<SimComm>>& comms) {
  const PostRecord* first = nullptr;
  const SimComm* where = nullptr;
  int64_t cseq = -1;
  core::RankId partner = -1;
  for (const auto& c : comms) {
    // Only the pairs that ever posted, in (src, dst) order.
    for (const auto& [pair, ch] : c->channels) {
      const auto [src, dst] = pair;
      for (const auto* q : {&ch.unpaired_sends, &ch.unpaired_recvs}) {
        if (q->empty() || (first != nullptr && first->op_id < q->front().op_id)) continue;
        first = &q->front();
        where = c.get();
        const bool is_send = q == &ch.unpaired_sends;
        cseq = is_send ? ch.sends_posted - static_cast<int64_t>(q->size())
                       : ch.recvs_posted - static_cast<int64_t>(q->size());
        partner = c->members[static_cast<size_t>(is_send ? dst : src)];
      }
    }
  }
  if (first == nullptr) return std::nullopt;
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::unmatched;
  const bool is_send = first->desc.kind == core::OpKind::send;
  f.summary = fmt::format(
      "rank{} posted {} on '{}' (#{}) and rank{} never posted the matching {}: the run completed only because the "
      "send fit the connection buffer (R4); its data waits there for the next {} from rank{} (R3)",
      first->rank, core::describe(first->desc), where->name, cseq, partner, is_send ? "recv" : "send",
      is_send ? "recv" : "send", first->rank);
  f.sites.push_back(core::Site{first->rank, std::string(first->actor), where->name, cseq, core::describe(first->desc),
                               std::string(first->origin)});
  f.sites.push_back(core::Site{partner, "", where->name, cseq,
                               fmt::format("never posts the matching {}", is_send ? "recv" : "send"), ""});
  f.culprit = core::Culprit{partner, where->name, true, first->rank, cseq, core::Blame::never_posted};
  return f;
}

}  // namespace ppspec::sim
