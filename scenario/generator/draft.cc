#include "scenario/generator/draft.h"

#include <fmt/format.h>

namespace ppspec::generator {
namespace {

using program::OpType;
using program::ProgramOp;

ProgramOp op_of(OpType t, std::string stream = "") {
  ProgramOp op;
  op.type = t;
  op.stream = std::move(stream);
  return op;
}

ProgramOp comm_op_of(OpType t, const std::string& comm, const Payload& pl, core::RankId peer, std::string stream) {
  ProgramOp op = op_of(t, std::move(stream));
  op.comm = comm;
  op.count = pl.count;
  op.dtype = pl.dtype;
  op.peer = peer;
  return op;
}

// A transfer of a hazard round: its label is the round's with a suffix, x, y or z.
ProgramOp suffixed_p2p(OpType t, const char* comm, const Payload& pl, core::RankId peer, const std::string& stream,
                       const char* suffix) {
  ProgramOp op = comm_op_of(t, comm, pl, peer, stream);
  op.label = suffix;
  return op;
}

// Appends one unit per rank; every operation gets the round's origin, communication its label.
class RoundBuilder {
 public:
  RoundBuilder(Draft& d, const Round& r) : d_(d), r_(r) {}
  void operator()(const Collective& c);
  void operator()(const Transfer& t);
  void operator()(const Exchange& e);
  void operator()(const Ring& g);
  void operator()(const SelfExchange& s);
  void operator()(const GraphCapture& g);
  void operator()(const Launch& l);
  void operator()(const Preload& l);
  void operator()(const EventHandoff& e);
  void operator()(const HostCall& h);
  void operator()(const Sleep& s);
  void operator()(const BlockingHazard& h);
  void operator()(const LoaderRace& l);

 private:
  void push(core::RankId rank, Unit u);
  void host(core::RankId rank, std::vector<ProgramOp> ops) { push(rank, Unit{std::move(ops), ""}); }
  Draft& d_;
  const Round& r_;
};

void RoundBuilder::push(core::RankId rank, Unit u) {
  for (ProgramOp& op : u.ops) {
    op.origin = r_.origin;
    if (program::is_comm_op(op.type)) op.label = r_.label + op.label;  // a suffix so far
  }
  d_.units(rank, r_.thread).push_back(std::move(u));
}

void RoundBuilder::operator()(const Collective& c) {
  for (size_t m = 0; m < c.members.size(); ++m) {
    const core::RankId peer = c.type == OpType::broadcast ? c.root : -1;
    push(c.members[m], Unit{{comm_op_of(c.type, c.comm, c.payload, peer, c.streams[m])}, c.comm});
  }
}

void RoundBuilder::operator()(const Transfer& t) {
  push(t.from, Unit{{comm_op_of(OpType::send, t.comm, t.payload, t.to, t.send_stream)}, t.comm});
  push(t.to, Unit{{comm_op_of(OpType::recv, t.comm, t.payload, t.from, t.recv_stream)}, t.comm});
}

void RoundBuilder::operator()(const Exchange& e) {
  for (int s = 0; s < 2; ++s) {
    const Exchange::Side& me = e.sides[s];
    const core::RankId peer = e.sides[1 - s].rank;
    const ProgramOp send = comm_op_of(OpType::send, e.comm, e.payload, peer, me.send_stream);
    const ProgramOp recv = comm_op_of(OpType::recv, e.comm, e.payload, peer, me.recv_stream);
    Unit u{{}, e.comm};
    if (e.grouped) u.ops.push_back(op_of(OpType::group_start));
    u.ops.push_back(me.send_first ? send : recv);
    u.ops.push_back(me.send_first ? recv : send);
    if (e.grouped) u.ops.push_back(op_of(OpType::group_end));
    push(me.rank, std::move(u));
  }
}

void RoundBuilder::operator()(const Ring& g) {
  const auto n = g.members.size();
  const auto shift = static_cast<size_t>(g.shift);
  for (size_t m = 0; m < n; ++m) {
    const ProgramOp send = comm_op_of(OpType::send, g.comm, g.payload, g.members[(m + shift) % n], g.send_streams[m]);
    const ProgramOp recv =
        comm_op_of(OpType::recv, g.comm, g.payload, g.members[(m + n - shift) % n], g.recv_streams[m]);
    push(g.members[m], Unit{{op_of(OpType::group_start), send, recv, op_of(OpType::group_end)}, g.comm});
  }
}

void RoundBuilder::operator()(const SelfExchange& s) {
  const ProgramOp send = comm_op_of(OpType::send, s.comm, Payload{s.count, core::Dtype::f32}, s.rank, s.stream);
  ProgramOp recv = send;
  recv.type = OpType::recv;
  Unit u{{op_of(OpType::group_start), send}, s.comm};
  if (s.matched) u.ops.push_back(recv);
  u.ops.push_back(op_of(OpType::group_end));
  push(s.rank, std::move(u));
}

void RoundBuilder::operator()(const GraphCapture& g) {
  for (size_t m = 0; m < g.members.size(); ++m) {
    const std::string& s = g.streams[m];
    Unit u{{op_of(OpType::capture_begin, s)}, g.comm};
    const Payload pl{g.count, core::Dtype::f32};
    if (g.p2p) {
      const ProgramOp send = comm_op_of(OpType::send, g.comm, pl, g.members[1 - m], s);
      ProgramOp recv = send;
      recv.type = OpType::recv;
      u.ops.insert(u.ops.end(), {op_of(OpType::group_start), send, recv, op_of(OpType::group_end)});
    } else {
      u.ops.push_back(comm_op_of(OpType::all_reduce, g.comm, pl, -1, s));
    }
    ProgramOp end = op_of(OpType::capture_end, s);
    end.graph = g.graph;
    u.ops.push_back(end);
    end.type = OpType::graph_launch;
    for (int k = 0; k < g.launches; ++k) u.ops.push_back(end);
    push(g.members[m], std::move(u));
  }
}

void RoundBuilder::operator()(const Launch& l) {
  ProgramOp k = op_of(OpType::launch, l.stream);
  k.kernel = l.kernel;
  k.spec = l.spec;
  k.duration = l.duration;
  host(l.rank, {k});
}

void RoundBuilder::operator()(const Preload& l) {
  ProgramOp k = op_of(OpType::preload);
  k.kernel = l.kernel;
  k.spec = l.spec;
  host(l.rank, {k});
}

void RoundBuilder::operator()(const EventHandoff& e) {
  ProgramOp rec = op_of(OpType::record, e.record_stream);
  rec.event = e.event;
  ProgramOp wait = rec;
  wait.type = e.wait;
  wait.stream = e.wait_stream;
  host(e.rank, {rec, wait});
}

void RoundBuilder::operator()(const HostCall& h) {
  ProgramOp call = op_of(h.type, h.stream);
  call.count = h.count;
  host(h.rank, {call});
}

void RoundBuilder::operator()(const Sleep& s) {
  ProgramOp sl = op_of(OpType::sleep);
  sl.duration = s.duration;
  host(s.rank, {sl});
}

// The receiver's recv x and call come first; the sender's send x comes after the receiver's y
// unless the sender is independent.
void RoundBuilder::operator()(const BlockingHazard& h) {
  const core::RankId a = h.sender, b = h.receiver;
  auto p2p = [&h](OpType t, const char* comm, core::RankId peer, const std::string& stream, const char* suffix) {
    return suffixed_p2p(t, comm, h.payload, peer, stream, suffix);
  };
  ProgramOp call = op_of(h.call, h.call_stream);
  if (h.call == OpType::malloc) call.count = 4096;
  call.kernel = h.call_kernel;
  Unit ub{{p2p(OpType::recv, "early", a, h.receiver_stream, ".x"), call}, "early"};
  Unit ua{{}, "early"};
  if (h.variant != BlockingHazard::Sender::independent) {
    ub.ops.push_back(p2p(OpType::send, "world", a, h.receiver_stream, ".y"));
    ua.ops.push_back(p2p(OpType::recv, "world", b, h.sender_stream, ".y"));
    if (h.variant == BlockingHazard::Sender::dependent) ua.ops.push_back(op_of(OpType::stream_sync, h.sender_stream));
  }
  ua.ops.push_back(p2p(OpType::send, "early", b, h.sender_stream, ".x"));
  push(b, std::move(ub));
  push(a, std::move(ua));
}

void RoundBuilder::operator()(const LoaderRace& l) {
  auto p2p = [&l](OpType t, const char* comm, core::RankId peer, const std::string& stream, const char* suffix) {
    return suffixed_p2p(t, comm, l.payload, peer, stream, suffix);
  };
  const std::string& sa = l.x_stream;
  const std::string& sb = l.y_stream;
  push(l.loader, Unit{{p2p(OpType::recv, "early", l.a, sa, ".x"), p2p(OpType::send, "world", l.c, sb, ".y")}, "early"});
  push(l.c, Unit{{p2p(OpType::recv, "world", l.loader, sb, ".y"), op_of(OpType::stream_sync, sb),
                  p2p(OpType::send, "world", l.a, sb, ".z")},
                 "world"});
  push(l.a, Unit{{p2p(OpType::recv, "world", l.c, sa, ".z"), op_of(OpType::stream_sync, sa),
                  p2p(OpType::send, "early", l.loader, sa, ".x")},
                 "world"});
}

}  // namespace

void add_round(Draft& d, const Round& r) { std::visit(RoundBuilder(d, r), r.body); }

void finish(const Draft& d, const ThreadEnds& ends, program::Program& p) {
  p.ranks.assign(d.ranks.size(), {});
  ProgramOp drain = op_of(OpType::device_sync);
  drain.origin = ends.drain_origin;
  auto flatten = [](const std::vector<Unit>& us, program::ThreadProgram& t) {
    for (const Unit& u : us) t.ops.insert(t.ops.end(), u.ops.begin(), u.ops.end());
  };
  for (size_t r = 0; r < d.ranks.size(); ++r) {
    auto& threads = p.ranks[r];
    threads.push_back(program::ThreadProgram{});
    flatten(d.ranks[r].main, threads.back());
    threads.back().ops.push_back(drain);
    if (!d.ranks[r].has_second) continue;
    threads.push_back(program::ThreadProgram{});
    threads.back().name = ends.second_name;
    flatten(d.ranks[r].second, threads.back());
    if (ends.second_drains) threads.back().ops.push_back(drain);
  }
}

}  // namespace ppspec::generator
