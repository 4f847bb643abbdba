#include "sim/comm_pairing.h"

#include <algorithm>
#include <fmt/format.h>
#include <string>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "sim/comm_findings.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

namespace {

OrderInversions::Participant participant(const PostRecord& r) {
  return {r.rank, r.issue_idx, r.actor, r.origin, r.desc};
}

}  // namespace

void PostPairing::watch_order_inversions(const std::vector<std::unique_ptr<SimComm>>& comms, int num_ranks) {
  std::vector<std::vector<core::RankId>> members;
  std::vector<std::string> names;
  for (const auto& c : comms) {
    members.push_back(c->members);
    names.push_back(c->name);
  }
  inversions_.set_membership(num_ranks, members, names);
}

// NCCL pairs a group's sends to self with its receives from self when it schedules the group
// (scheduleP2pTasksToPlan): one without the other fails ncclGroupEnd with ncclInvalidUsage ("Trying
// to send to self without a matching recv"). A matched pair is legal: an all-to-all's own block.
namespace {
// How many sends to itself and receives from itself `p`'s member posts on its communicator in `parts`.
std::pair<int64_t, int64_t> self_exchanges(const std::vector<PartSpec>& parts, const PartSpec& p) {
  int64_t sends = 0, recvs = 0;
  for (const PartSpec& q : parts)
    if (q.comm == p.comm && q.crank == q.peer && core::is_p2p(q.desc.kind))
      (q.desc.kind == core::OpKind::send ? sends : recvs) += 1;
  return {sends, recvs};
}
}  // namespace

const PartSpec* PostPairing::unmatched_self(const std::vector<PartSpec>& parts) const {
  for (const PartSpec& p : parts) {
    if (!core::is_p2p(p.desc.kind) || p.peer != p.crank) continue;
    if (const auto [sends, recvs] = self_exchanges(parts, p); sends != recvs) return &p;
  }
  return nullptr;
}

void PostPairing::reject_unmatched_self(const std::vector<PartSpec>& parts) {
  if (const PartSpec* bad = unmatched_self(parts)) {
    const PartSpec& p = *bad;
    const auto [sends, recvs] = self_exchanges(parts, p);
    World& w = rt_.world();
    const core::RankId rank = p.comm->members[static_cast<size_t>(p.crank)];
    core::Finding f;
    f.verdict = core::Verdict::invalid_usage;
    f.kind = core::FindingKind::unmatched_self_p2p;
    f.summary = fmt::format(
        "{} {} on '{}' posts {} send(s) to itself and {} receive(s) from itself: NCCL fails {} with ncclInvalidUsage "
        "(\"Trying to {} to self without a matching {}\")",
        w.current().name, parts.size() == 1 ? "in an ungrouped call" : "in one group", p.comm->name, sends, recvs,
        parts.size() == 1 ? "the call" : "ncclGroupEnd", sends > recvs ? "send" : "recv",
        sends > recvs ? "recv" : "send");
    f.sites.push_back(core::Site{rank, w.current().name, p.comm->name, -1, std::string(core::to_string(p.desc.kind)),
                                 std::string(p.origin)});
    w.stop(std::move(f));
  }
}

// The rank's next issue index; the parts of one group share one (the group is one kernel per rank).
uint64_t PostPairing::issue_index(core::RankId rank) {
  if (rank_issue_.size() < static_cast<size_t>(rt_.num_ranks()))
    rank_issue_.resize(static_cast<size_t>(rt_.num_ranks()), 0);
  PPSPEC_ASSERT(rank >= 0 && static_cast<size_t>(rank) < rank_issue_.size());
  HostState& host = rt_.host_state();
  if (host.group_depth == 0) return rank_issue_[static_cast<size_t>(rank)]++;
  auto it =
      std::find_if(host.group_issue.begin(), host.group_issue.end(), [rank](const auto& p) { return p.first == rank; });
  if (it == host.group_issue.end()) {
    host.group_issue.emplace_back(rank, rank_issue_[static_cast<size_t>(rank)]++);
    it = host.group_issue.end() - 1;
  }
  return it->second;
}

PostRecord PostPairing::record(const PartSpec& spec, core::RankId rank) const {
  const HostState& host = rt_.host_state();
  PostRecord rec;
  rec.op_id = spec.id;
  rec.desc = spec.desc;
  rec.rank = rank;
  rec.actor = spec.stream->full_name();
  rec.origin = spec.origin;
  rec.issue_idx = spec.issue_idx;
  rec.group = host.group_depth > 0 ? host.group_id : -1;
  return rec;
}

void PostPairing::register_post(PartSpec& spec) {
  const core::RankId rank = spec.comm->members[static_cast<size_t>(spec.crank)];
  spec.issue_idx = issue_index(rank);
  spec.id = next_op_id_++;
  const PostRecord rec = record(spec, rank);
  if (core::is_p2p(spec.desc.kind))
    register_p2p(spec, rec);
  else
    register_collective(spec, rec);
}

void PostPairing::register_p2p(PartSpec& spec, const PostRecord& rec) {
  SimComm& comm = *spec.comm;
  const bool is_send = spec.desc.kind == core::OpKind::send;
  const int src = is_send ? spec.crank : spec.peer;
  const int dst = is_send ? spec.peer : spec.crank;
  P2PChannel& ch = comm.channel(src, dst);
  spec.channel = &ch;
  spec.cseq = is_send ? ch.sends_posted++ : ch.recvs_posted++;
  (is_send ? ch.send_history : ch.recv_history).push(spec.desc);
  if (rt_.world().bus().active()) emit_record(core::EventKind::op_posted, rec, comm, spec.cseq, rec.group);
  auto& mine = is_send ? ch.unpaired_sends : ch.unpaired_recvs;
  auto& theirs = is_send ? ch.unpaired_recvs : ch.unpaired_sends;
  if (theirs.empty()) {
    mine.push_back(rec);
    return;
  }
  PPSPEC_ASSERT(mine.empty(), "a channel holds unpaired sends and receives at once");
  const PostRecord other = theirs.front();
  theirs.pop_front();
  if (is_send)
    on_pair(rec, other, comm, spec.cseq);
  else
    on_pair(other, rec, comm, spec.cseq);
}

void PostPairing::register_collective(PartSpec& spec, const PostRecord& rec) {
  World& w = rt_.world();
  SimComm& comm = *spec.comm;
  CommRankState& rs = comm.ranks[static_cast<size_t>(spec.crank)];
  spec.cseq = rs.coll_posted++;
  rs.history.push(spec.desc);
  if (w.bus().active()) emit_record(core::EventKind::op_posted, rec, comm, spec.cseq, rec.group);
  CollSlot* slot = comm.slot(spec.cseq);
  PPSPEC_ASSERT(slot != nullptr);
  slot->units[static_cast<size_t>(spec.crank)] = units_of(spec.buf.bytes(), w.config().unit_bytes);
  on_collective_post(rec, spec.crank, comm, spec.cseq, *slot);
}

// A send and its positional recv meet (R3).
void PostPairing::on_pair(const PostRecord& send, const PostRecord& recv, SimComm& comm, int64_t cseq) {
  World& w = rt_.world();
  ++pairs_;
  if (w.bus().active()) {
    emit_record(core::EventKind::op_paired, send, comm, cseq, recv.op_id);
    emit_record(core::EventKind::op_paired, recv, comm, cseq, send.op_id);
  }
  findings_.judge_pair(send, recv, comm, cseq);
  // After a mismatch every later pairing may be shifted: its order says nothing of the program's.
  if (inversions_.enabled() && !findings_.mismatch_seen()) {
    const OrderInversions::Participant parts[2] = {participant(send), participant(recv)};
    inversions_.on_matched(comm.index, cseq, parts);
  }
}

// A member posts its collective: a disagreement with the first poster is found here, and reported
// once every member posted, so that the report can name the odd one out (R5).
void PostPairing::on_collective_post(const PostRecord& rec, int crank, SimComm& comm, int64_t cseq, CollSlot& slot) {
  const auto m = static_cast<size_t>(crank);
  ++slot.posted;
  PPSPEC_ASSERT(slot.posted <= comm.size() && slot.posts[m].op_id < 0, "member {} posts collective #{} twice", crank,
                cseq);
  slot.posts[m] = rec;
  if (slot.first < 0)
    slot.first = static_cast<int>(m);
  else
    findings_.judge_collective_post(rec, comm, cseq, slot);
  if (slot.first_labelled < 0 && !rec.desc.label.empty()) slot.first_labelled = static_cast<int>(m);
  if (slot.posted == comm.size()) on_slot_posted(rec, comm, cseq, slot);
}

// The last member posted the slot (`last`): the collective is positionally complete.
void PostPairing::on_slot_posted(const PostRecord& last, SimComm& comm, int64_t cseq, CollSlot& slot) {
  // Reported before the slot counts as a pairing: in report mode the run stops here, so the
  // bogus pairing reaches neither the pair count nor the cross-communicator order check.
  findings_.report_collective(last, comm, cseq, slot);
  ++pairs_;
  if (inversions_.enabled() && !findings_.mismatch_seen()) {
    std::vector<OrderInversions::Participant> parts;
    for (const PostRecord& r : slot.posts) parts.push_back(participant(r));
    inversions_.on_matched(comm.index, cseq, parts);
  }
}

void PostPairing::emit_record(core::EventKind kind, const PostRecord& rec, const SimComm& comm, int64_t cseq,
                              int64_t value) {
  core::Event e = rt_.world().event(kind, rec.rank, rec.actor);
  e.comm = comm.name;
  e.op_id = rec.op_id;
  e.cseq = cseq;
  e.has_op = true;
  e.op = rec.desc;
  e.text = rec.origin;
  e.value = value;
  rt_.world().bus().publish(e);
}

}  // namespace ppspec::sim
