#include "scenario/generator/disturb.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::generator {
namespace {

using program::OpType;
using program::ProgramOp;

bool has_op(const Unit& u, OpType t) {
  return std::any_of(u.ops.begin(), u.ops.end(), [t](const ProgramOp& op) { return op.type == t; });
}

const ProgramOp* first_comm_op(const Unit& u) {
  for (const ProgramOp& op : u.ops)
    if (program::is_comm_op(op.type)) return &op;
  return nullptr;
}

// Two units of one rank that the communicator matches in the same FIFO.
bool same_channel(const Unit& x, const Unit& y) {
  const ProgramOp* a = first_comm_op(x);
  const ProgramOp* b = first_comm_op(y);
  if (a == nullptr || b == nullptr || a->comm != b->comm || program::is_p2p_op(a->type) != program::is_p2p_op(b->type))
    return false;
  if (!program::is_p2p_op(a->type)) return true;  // collectives share one sequence
  return a->type == b->type && a->peer == b->peer;
}

const program::CommDecl& comm_named(const program::Program& p, const std::string& name) {
  const auto it =
      std::find_if(p.comms.begin(), p.comms.end(), [&](const program::CommDecl& c) { return c.name == name; });
  PPSPEC_ASSERT(it != p.comms.end(), "a unit on an undeclared communicator '{}'", name);
  return *it;
}

// The member of `comm` after `rank` (by global rank, cyclically): another root for its broadcast.
core::RankId next_member(const program::Program& p, const std::string& comm, core::RankId rank) {
  const program::CommDecl& c = comm_named(p, comm);
  for (core::RankId k = 1; k <= p.num_ranks; ++k) {
    const core::RankId r = (rank + k) % p.num_ranks;
    if (std::find(c.ranks.begin(), c.ranks.end(), r) != c.ranks.end()) return r;
  }
  return rank;
}

std::string doubled_count(RankUnits r, Unit& u, const std::string& what) {
  for (ProgramOp& op : u.ops)
    if (program::is_comm_op(op.type)) op.count = op.count == 0 ? 3 : op.count * 2;
  return fmt::format("rank {} posts its {} on '{}' with twice the count", r.rank, what, u.comm);
}

// One rank sends to, or receives from, another member than its peer.
std::string wrong_peer(RankUnits r, Unit& u, const Choose& choose) {
  const program::CommDecl& comm = comm_named(r.program, u.comm);
  for (ProgramOp& op : u.ops) {
    if (!program::is_p2p_op(op.type) || op.peer == r.rank) continue;  // not a send to oneself
    std::vector<core::RankId> others;
    for (core::RankId m : comm.ranks)
      if (m != op.peer && m != r.rank) others.push_back(m);
    if (others.empty()) continue;  // two members: the only other peer is oneself
    const core::RankId was = op.peer;
    op.peer = others[choose(others.size())];
    return fmt::format("rank {} {} rank {} instead of rank {} on '{}'", r.rank,
                       op.type == OpType::send ? "sends to" : "receives from", op.peer, was, u.comm);
  }
  return doubled_count(r, u, "group");  // no third member to point at
}

std::string swapped(RankUnits r, size_t at, const std::string& what, const Choose& choose) {
  std::vector<size_t> partners;
  for (size_t j = 0; j < r.units.size(); ++j)
    if (j != at && takes_place(r.units[j]) && same_channel(r.units[at], r.units[j])) partners.push_back(j);
  if (partners.empty()) return doubled_count(r, r.units[at], what);
  const size_t j = partners[choose(partners.size())];
  std::swap(r.units[at], r.units[j]);
  return fmt::format("rank {} posts its {} on '{}' in the other order with another on that channel", r.rank, what,
                     r.units[j].comm);
}

}  // namespace

std::string_view to_string(Disturbance d) {
  switch (d) {
    case Disturbance::drop: return "drop";
    case Disturbance::extra: return "double";
    case Disturbance::count: return "count";
    case Disturbance::dtype: return "dtype";
    case Disturbance::root: return "root";
    case Disturbance::peer: return "peer";
    case Disturbance::invert: return "invert";
    case Disturbance::swap: return "swap";
  }
  return "?";
}

bool takes_place(const Unit& u) {
  return std::any_of(u.ops.begin(), u.ops.end(), [](const ProgramOp& op) {
    return program::is_comm_op(op.type) && (program::is_p2p_op(op.type) || op.count > 0);
  });
}

std::string disturb(RankUnits r, size_t at, Disturbance kind, const Choose& choose) {
  PPSPEC_ASSERT(kind != Disturbance::invert, "an inverted order is invert_order's");
  Unit& u = r.units[at];
  if (kind == Disturbance::root && !has_op(u, OpType::broadcast)) kind = Disturbance::count;
  if (kind == Disturbance::peer && !has_op(u, OpType::send) && !has_op(u, OpType::recv)) kind = Disturbance::count;
  if (kind == Disturbance::peer) return wrong_peer(r, u, choose);
  const std::string what = u.ops.size() == 1 ? std::string(program::to_string(u.ops[0].type)) : "group";
  if (kind == Disturbance::swap) return swapped(r, at, what, choose);
  if (kind == Disturbance::drop) {
    const std::string said = fmt::format("rank {} never posts its {} '{}'", r.rank, what, u.comm);
    r.units.erase(r.units.begin() + static_cast<std::ptrdiff_t>(at));
    return said;
  }
  if (kind == Disturbance::extra) {
    const std::string said = fmt::format("rank {} posts its {} on '{}' twice", r.rank, what, u.comm);
    r.units.insert(r.units.begin() + static_cast<std::ptrdiff_t>(at), u);
    return said;
  }
  if (kind == Disturbance::count) return doubled_count(r, u, what);
  for (ProgramOp& op : u.ops) {
    if (!program::is_comm_op(op.type)) continue;
    if (kind == Disturbance::dtype) op.dtype = op.dtype == core::Dtype::f32 ? core::Dtype::i64 : core::Dtype::f32;
    if (kind == Disturbance::root && op.type == OpType::broadcast) op.peer = next_member(r.program, u.comm, op.peer);
  }
  return fmt::format("rank {} posts its {} on '{}' with {}", r.rank, what, u.comm,
                     kind == Disturbance::dtype ? "another dtype" : "another root");
}

std::string invert_order(RankUnits r) {
  std::vector<Unit>& us = r.units;
  std::vector<size_t> comm_units;
  for (size_t i = 0; i < us.size(); ++i)
    if (!us[i].comm.empty()) comm_units.push_back(i);
  for (size_t k = 0; k + 1 < comm_units.size(); ++k) {
    const size_t i = comm_units[k], j = comm_units[k + 1];
    if (us[i].comm == us[j].comm) continue;
    std::swap(us[i], us[j]);
    return fmt::format("rank {} issues its rounds on '{}' and '{}' in the other order", r.rank, us[j].comm, us[i].comm);
  }
  return "";
}

}  // namespace ppspec::generator
