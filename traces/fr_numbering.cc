// The calls PyTorch makes of a rank's operations, and how its recorder numbers them
// (ProcessGroupNCCL::collective, pointToPoint, collectiveCoalesced, endCoalescing; ProcessGroupGloo::enqueue).
#include <algorithm>

#include "core/assert.h"
#include "traces/fr_writer.h"

namespace ppspec::traces {
namespace {

using core::OpKind;

std::vector<int64_t> dims_of(const core::OpDesc& d) {
  if (d.cols > 1 && d.count % d.cols == 0) return {d.count / d.cols, d.cols};
  return {d.count};
}

bool all_of_kind(const std::vector<FrPosted>& call, OpKind k) {
  return std::all_of(call.begin(), call.end(), [k](const FrPosted& p) { return p.desc.kind == k; });
}

// One send to and one receive from every member, itself included: what an all_to_all becomes in NCCL.
bool is_all_to_all(const std::vector<FrPosted>& call, const std::vector<int>& members) {
  if (members.size() < 2 || call.size() != 2 * members.size()) return false;
  std::vector<int> to, from;
  for (const FrPosted& p : call) {
    if (!core::is_p2p(p.desc.kind)) return false;
    (p.desc.kind == OpKind::send ? to : from).push_back(p.desc.peer);
  }
  std::sort(to.begin(), to.end());
  std::sort(from.begin(), from.end());
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  return to == sorted && from == sorted;
}

// A broadcast from each member in turn, each its own size: an all_gather of uneven sizes.
bool is_uneven_all_gather(const std::vector<FrPosted>& call, const std::vector<int>& members) {
  if (call.size() != members.size() || call.size() < 2 || !all_of_kind(call, OpKind::broadcast)) return false;
  for (size_t i = 0; i < call.size(); ++i)
    if (call[i].desc.peer != members[i]) return false;
  return true;
}

// The record's tensors: one per operation; an all_gather's output holds every member's.
void size_single(FrRecordPlan& r, const FrPosted& p, size_t world) {
  const std::vector<int64_t> s = dims_of(p.desc);
  r.inputs.push_back(s);
  if (p.desc.kind != OpKind::all_gather) {
    r.outputs.push_back(s);
    return;
  }
  std::vector<int64_t> out{static_cast<int64_t>(world)};
  out.insert(out.end(), s.begin(), s.end());
  r.outputs.push_back(out);
}

}  // namespace

std::vector<FrRecordPlan> FrNumbering::next(const FrPosted& p) {
  std::vector<FrRecordPlan> out;
  const bool joins = !open_.empty() && p.group >= 0 && open_.back().group == p.group && open_.back().comm == p.comm;
  if (!open_.empty() && !joins) out = close();
  if (p.group < 0) {
    std::vector<FrRecordPlan> mine = plan({p});
    out.insert(out.end(), mine.begin(), mine.end());
  } else {
    open_.push_back(p);
  }
  return out;
}

std::vector<FrRecordPlan> FrNumbering::close() {
  if (open_.empty()) return {};
  std::vector<FrPosted> call = std::move(open_);
  open_.clear();
  return plan(std::move(call));
}

FrRecordPlan FrNumbering::number(FrRecordPlan r, bool coll, bool p2p) {
  const std::string& c = r.comm;
  if (coll) ++coll_[c];
  if (p2p) ++p2p_[c];
  if (r.role != FrRecordPlan::Role::closer) ++op_[c];
  r.coll = coll_[c];
  r.p2p = p2p_[c];
  r.op = op_[c];
  r.record = records_++;
  return r;
}

// One record for the whole call: an all_to_all, or _coalescing_manager's fast path.
FrRecordPlan FrNumbering::fused(const std::vector<FrPosted>& call, std::string name) {
  PPSPEC_ASSERT(!call.empty());
  FrRecordPlan r;
  r.name = std::move(name);
  r.comm = call.front().comm;
  r.posts = call;
  const size_t world = members_[r.comm].size();
  if (r.name == "all_to_all") {
    // all_to_all_single records each rank's whole input and output tensor: rows of one width.
    int64_t sent = 0, received = 0;
    const int64_t cols = call.front().desc.cols;
    bool rows = cols > 1;
    for (const FrPosted& p : call) {
      (p.desc.kind == OpKind::send ? sent : received) += p.desc.count;
      rows = rows && p.desc.cols == cols && p.desc.count % cols == 0;
    }
    r.inputs = {rows ? std::vector<int64_t>{sent / cols, cols} : std::vector<int64_t>{sent}};
    r.outputs = {rows ? std::vector<int64_t>{received / cols, cols} : std::vector<int64_t>{received}};
  } else {
    for (const FrPosted& p : call) size_single(r, p, world);
  }
  return number(std::move(r), true, false);
}

// The members, recorded one by one without events, then the record that closes them.
std::vector<FrRecordPlan> FrNumbering::coalesced(const std::vector<FrPosted>& call, const std::string& member,
                                                 const std::string& closer) {
  std::vector<FrRecordPlan> out;
  bool coll_seen = false, p2p_seen = false;
  const size_t world = members_[call.front().comm].size();
  for (const FrPosted& p : call) {
    FrRecordPlan r;
    r.role = FrRecordPlan::Role::member;
    r.name = member.empty() ? std::string(core::to_string(p.desc.kind)) : member;
    r.comm = p.comm;
    r.posts = {p};
    r.is_p2p = core::is_p2p(p.desc.kind);
    size_single(r, p, world);
    const bool first_coll = !r.is_p2p && !coll_seen, first_p2p = r.is_p2p && !p2p_seen;
    coll_seen = coll_seen || !r.is_p2p;
    p2p_seen = p2p_seen || r.is_p2p;
    out.push_back(number(std::move(r), first_coll, first_p2p));
  }
  FrRecordPlan c;
  c.role = FrRecordPlan::Role::closer;
  c.name = closer;
  c.comm = call.front().comm;
  c.posts = call;
  out.push_back(number(std::move(c), false, false));
  return out;
}

std::vector<FrRecordPlan> FrNumbering::plan(std::vector<FrPosted> call) {
  PPSPEC_ASSERT(!call.empty());
  const std::vector<int>& members = members_[call.front().comm];
  const bool p2p = std::all_of(call.begin(), call.end(), [](const FrPosted& p) { return core::is_p2p(p.desc.kind); });
  const bool colls =
      std::none_of(call.begin(), call.end(), [](const FrPosted& p) { return core::is_p2p(p.desc.kind); });
  if (p2p && is_all_to_all(call, members)) return {fused(call, "all_to_all")};
  if (opts_.backend == FrBackend::gloo) {  // collectives one by one; Gloo records no p2p
    std::vector<FrRecordPlan> out;
    for (const FrPosted& p : call)
      if (!core::is_p2p(p.desc.kind)) out.push_back(fused({p}, std::string(core::to_string(p.desc.kind))));
    return out;
  }
  if (call.size() == 1 && call.front().group < 0) {
    FrRecordPlan r;
    r.name = std::string(core::to_string(call.front().desc.kind));
    r.comm = call.front().comm;
    r.posts = call;
    r.is_p2p = p2p;
    size_single(r, call.front(), members.size());
    return {number(std::move(r), !p2p, p2p)};
  }
  if (colls && is_uneven_all_gather(call, members)) return coalesced(call, "_broadcast_oop", "ALLGATHER_coalesced");
  if (colls && opts_.fast_coalescing && all_of_kind(call, OpKind::all_reduce))
    return {fused(call, "allreduce_coalesced")};
  if (colls && opts_.fast_coalescing && all_of_kind(call, OpKind::all_gather))
    return {fused(call, "all_gather_into_tensor_coalesced")};
  return coalesced(call, "", "coalesced");
}

}  // namespace ppspec::traces
