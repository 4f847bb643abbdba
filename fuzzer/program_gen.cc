#include "fuzzer/program_gen.h"

#include <algorithm>
#include <fmt/format.h>

namespace ppspec::fuzzer {
namespace {

using program::OpType;
using program::ProgramOp;

constexpr core::Dtype kDtypes[] = {core::Dtype::f32, core::Dtype::i32, core::Dtype::i64, core::Dtype::u8,
                                   core::Dtype::f16};

std::vector<core::RankId> members_of(uint32_t mask, int ranks) {
  std::vector<core::RankId> m;
  for (int r = 0; r < ranks; ++r)
    if (mask & (1u << r)) m.push_back(r);
  if (m.size() < 2) {
    // A communicator needs two members: top it up deterministically.
    for (int r = 0; r < ranks && m.size() < 2; ++r)
      if (std::find(m.begin(), m.end(), r) == m.end()) m.push_back(r);
    std::sort(m.begin(), m.end());
  }
  return m;
}

ProgramOp p2p(OpType type, const ProgramOp& base, const std::string& comm, core::RankId peer, std::string stream,
             const std::string& suffix) {
  ProgramOp op = base;
  op.type = type;
  op.comm = comm;
  op.peer = peer;
  op.stream = std::move(stream);
  op.label = base.label + suffix;
  return op;
}

ProgramOp host_op(OpType type, const ProgramOp& base, std::string stream) {
  ProgramOp op;
  op.type = type;
  op.stream = std::move(stream);
  op.origin = base.origin;
  return op;
}

std::string stream_of(const program::Program& p, int i) { return p.streams[static_cast<size_t>(i) % p.streams.size()]; }

// Rank b receives x from rank a on "early", then makes a blocking call (device sync, malloc, or
// the first launch of a kernel: a module load unless loading is eager). Rank a sends x at once
// (independent: no hazard), or only after b's y, which b sends after the call: a stream_sync
// between (dependent) or x queued behind the receive of y on one stream (queued). Those hang under
// every schedule, through the call (a hazard), unless the call blocks nothing (an eager launch).
void hazard_round(program::Program& p, const RoundSpec& rs, const ProgramOp& base, size_t round) {
  const auto n = static_cast<int>(p.num_ranks);
  const core::RankId a = rs.a % n;
  core::RankId b = rs.b % n;
  if (b == a) b = (b + 1) % n;
  auto& ops_a = p.ranks[static_cast<size_t>(a)][0].ops;
  auto& ops_b = p.ranks[static_cast<size_t>(b)][0].ops;
  const std::string sa = stream_of(p, rs.stream_a);
  const std::string sb = stream_of(p, rs.stream_b);
  ops_b.push_back(p2p(OpType::recv, base, "early", a, sb, ".x"));
  ProgramOp call = host_op(rs.count % 3 == 0 ? OpType::device_sync : (rs.count % 3 == 1 ? OpType::malloc : OpType::launch), base,
                           stream_of(p, rs.stream_b + 1));
  if (call.type == OpType::malloc) call.count = 4096;
  if (call.type == OpType::launch) call.kernel = fmt::format("h{}", round);
  ops_b.push_back(call);
  const int variant = rs.duration % 3;
  if (variant == 0) {
    ops_a.push_back(p2p(OpType::send, base, "early", b, sa, ".x"));
    return;
  }
  ops_b.push_back(p2p(OpType::send, base, "world", a, sb, ".y"));
  ops_a.push_back(p2p(OpType::recv, base, "world", b, sa, ".y"));
  if (variant == 1) ops_a.push_back(host_op(OpType::stream_sync, base, sa));
  ops_a.push_back(p2p(OpType::send, base, "early", b, sa, ".x"));
}

// The loader's rank L receives x from a on "early", then sends y to c; c relays z to a, and a
// sends x only then. Should the loader's preload take the context lock between L's two calls, the
// send of y waits for the lock, the lock for the drain, the drain for x: a hang. Three distinct
// ranks, so that no two of them inverts the order of two communicators (R7).
void race_round(program::Program& p, const Shape& s, const RoundSpec& rs, const ProgramOp& base) {
  const int n = s.ranks;
  if (!s.race.on || n < 3) return;  // gen_race_shape makes none then
  const core::RankId l = s.race.rank % n;
  const core::RankId a = (l + 1 + rs.a % (n - 1)) % n;
  core::RankId c = (l + 1 + rs.b % (n - 1)) % n;
  if (c == a) c = (a + 1) % n == l ? (a + 2) % n : (a + 1) % n;
  auto ops = [&p](core::RankId r) -> std::vector<ProgramOp>& { return p.ranks[static_cast<size_t>(r)][0].ops; };
  const std::string sa = stream_of(p, rs.stream_a);
  const std::string sb = stream_of(p, rs.stream_a + 1);  // L's y does not queue behind its x, unless one stream
  ops(l).push_back(p2p(OpType::recv, base, "early", a, sa, ".x"));
  ops(l).push_back(p2p(OpType::send, base, "world", c, sb, ".y"));
  ops(c).push_back(p2p(OpType::recv, base, "world", l, sb, ".y"));
  ops(c).push_back(host_op(OpType::stream_sync, base, sb));
  ops(c).push_back(p2p(OpType::send, base, "world", a, sb, ".z"));
  ops(a).push_back(p2p(OpType::recv, base, "world", c, sa, ".z"));
  ops(a).push_back(host_op(OpType::stream_sync, base, sa));
  ops(a).push_back(p2p(OpType::send, base, "early", l, sa, ".x"));
}

// The communicator of hazard and race rounds' early receives, over every rank.
void add_early_comm(program::Program& p, const Shape& s) {
  if (!s.race.on && std::none_of(s.rounds.begin(), s.rounds.end(), [](const RoundSpec& r) { return r.kind >= kHazardRound; }))
    return;
  program::CommDecl e{"early", {}};
  for (int r = 0; r < s.ranks; ++r) e.ranks.push_back(r);
  p.comms.push_back(e);
}

// The loader thread: its preload takes the context lock at a moment the schedule picks.
void add_loader(program::Program& p, const Shape& s) {
  if (!s.race.on) return;
  ProgramOp sl;
  sl.type = OpType::sleep;
  sl.duration = s.race.sleep_us * core::kUs;
  sl.origin = "loader";
  ProgramOp load = sl;
  load.type = OpType::preload;
  load.kernel = "raced";
  load.duration = -1;
  p.ranks[static_cast<size_t>(s.race.rank % s.ranks)].push_back(program::ThreadProgram{"loader", 1, {sl, load}});
}

}  // namespace

rc::Gen<Shape> gen_shape() {
  return rc::gen::exec([] {
    Shape s;
    s.ranks = *rc::gen::inRange(2, 9);
    s.streams = *rc::gen::inRange(1, 4);
    s.comm_masks = *rc::gen::container<std::vector<uint32_t>>(*rc::gen::inRange(0, 3), rc::gen::inRange<uint32_t>(0, 256));
    const int n = *rc::gen::inRange(1, 30);
    for (int i = 0; i < n; ++i) {
      RoundSpec r;
      r.kind = *rc::gen::inRange(0, 10);
      r.comm = *rc::gen::inRange(0, 4);
      r.a = *rc::gen::inRange(0, 8);
      r.b = *rc::gen::inRange(0, 8);
      r.count = *rc::gen::inRange(0, 65);
      r.dtype = *rc::gen::inRange(0, 5);
      r.stream_a = *rc::gen::inRange(0, 3);
      r.stream_b = *rc::gen::inRange(0, 3);
      r.duration = *rc::gen::inRange(0, 50);
      s.rounds.push_back(r);
    }
    s.config.concurrency = *rc::gen::inRange(0, 2);
    s.config.eager = *rc::gen::inRange(0, 3);
    s.config.runtime_connect = *rc::gen::arbitrary<bool>();
    s.config.loading = *rc::gen::inRange(0, 3);
    s.config.jitter_pct = *rc::gen::inRange(0, 50);
    return s;
  });
}

rc::Gen<Shape> gen_hazard_shape() {
  return rc::gen::exec([] {
    Shape s = *gen_shape();
    const int n = *rc::gen::inRange(1, 4);
    for (int i = 0; i < n; ++i) {
      RoundSpec r = *rc::gen::exec([] {
        RoundSpec h;
        h.kind = kHazardRound;
        h.a = *rc::gen::inRange(0, 8);
        h.b = *rc::gen::inRange(0, 8);
        h.count = *rc::gen::inRange(0, 65);     // % 3: which blocking call
        h.duration = *rc::gen::inRange(0, 50);  // % 3: independent, dependent or queued sender
        h.stream_a = *rc::gen::inRange(0, 3);
        h.stream_b = *rc::gen::inRange(0, 3);
        return h;
      });
      const auto at = static_cast<std::ptrdiff_t>(*rc::gen::inRange<size_t>(0, s.rounds.size() + 1));
      s.rounds.insert(s.rounds.begin() + at, r);
    }
    return s;
  });
}

rc::Gen<Shape> gen_race_shape() {
  return rc::gen::exec([] {
    Shape s = *gen_shape();
    s.race.on = true;
    s.race.rank = *rc::gen::inRange(0, s.ranks);
    s.race.sleep_us = *rc::gen::inRange(0, 4);  // about where a first round's host calls are
    s.config.loading = 1;  // lazy: the preload loads, and soon (a JIT compile would put it past the first rounds)
    s.config.runtime_connect = false;  // a race round's early receive must not wait for first contact (R1)
    if (s.ranks >= 3 && *rc::gen::arbitrary<bool>()) {
      RoundSpec r;
      r.kind = kRaceRound;
      r.a = *rc::gen::inRange(0, 8);
      r.b = *rc::gen::inRange(0, 8);
      r.count = *rc::gen::inRange(0, 65);
      r.stream_a = *rc::gen::inRange(0, 3);
      r.stream_b = *rc::gen::inRange(0, 3);
      // First, half the time: where the loader's preload most often lands inside it.
      const auto at = *rc::gen::arbitrary<bool>() ? 0 : static_cast<std::ptrdiff_t>(*rc::gen::inRange<size_t>(0, s.rounds.size() + 1));
      s.rounds.insert(s.rounds.begin() + at, r);
    }
    return s;
  });
}

rc::Gen<PerturbSpec> gen_perturb() {
  return rc::gen::exec([] {
    PerturbSpec p;
    p.kind = *rc::gen::inRange(0, 6);
    p.rank = *rc::gen::inRange(0, 8);
    p.op = *rc::gen::inRange(0, 1000);
    return p;
  });
}

program::Program build(const Shape& s) {
  program::Program p;
  p.name = "generated";
  p.file = "generated.toml";
  p.num_ranks = s.ranks;
  p.streams.clear();
  for (int i = 0; i < s.streams; ++i) p.streams.push_back(fmt::format("s{}", i));
  program::CommDecl world{"world", {}};
  for (int r = 0; r < s.ranks; ++r) world.ranks.push_back(r);
  p.comms.push_back(world);
  for (size_t i = 0; i < s.comm_masks.size(); ++i)
    p.comms.push_back(program::CommDecl{fmt::format("c{}", i + 1), members_of(s.comm_masks[i], s.ranks)});

  sim::SimConfig& cfg = p.config;
  cfg.concurrency = s.config.concurrency == 0 ? core::Concurrency::ok : core::Concurrency::serial;
  cfg.eager_bytes = s.config.eager == 0 ? 0 : (s.config.eager == 1 ? 64 : 1 << 20);
  cfg.runtime_connect = s.config.runtime_connect;
  cfg.module_loading = s.config.loading == 0 ? core::ModuleLoading::eager
                                              : (s.config.loading == 1 ? core::ModuleLoading::lazy : core::ModuleLoading::jit);
  cfg.jitter = s.config.jitter_pct / 100.0;
  cfg.max_steps = 2'000'000;

  add_early_comm(p, s);

  p.ranks.assign(static_cast<size_t>(s.ranks), {program::ThreadProgram{}});
  auto ops = [&p](core::RankId r) -> std::vector<ProgramOp>& { return p.ranks[static_cast<size_t>(r)][0].ops; };
  auto stream = [&p](int i) { return p.streams[static_cast<size_t>(i) % p.streams.size()]; };
  int event_counter = 0;

  for (size_t i = 0; i < s.rounds.size(); ++i) {
    const RoundSpec& rs = s.rounds[i];
    const program::CommDecl& comm = p.comms[static_cast<size_t>(rs.comm) % p.comms.size()];
    const auto n = static_cast<int>(comm.ranks.size());
    const core::RankId a = comm.ranks[static_cast<size_t>(rs.a % n)];
    core::RankId b = comm.ranks[static_cast<size_t>(rs.b % n)];
    if (b == a) b = comm.ranks[static_cast<size_t>((rs.b + 1) % n)];
    const std::string label = fmt::format("r{}", i);
    ProgramOp base;
    base.comm = comm.name;
    base.dtype = kDtypes[rs.dtype % 5];
    base.count = rs.count;
    base.label = label;
    base.origin = fmt::format("round {}", i);
    switch (rs.kind) {
      case 0:
      case 1:
      case 2: {  // a collective over the communicator
        const OpType t = rs.kind == 0 ? OpType::all_reduce : (rs.kind == 1 ? OpType::broadcast : OpType::all_gather);
        for (int m = 0; m < n; ++m) {
          ProgramOp op = base;
          op.type = t;
          op.peer = t == OpType::broadcast ? a : -1;
          op.stream = stream(rs.stream_a + m);
          ops(comm.ranks[static_cast<size_t>(m)]).push_back(op);
        }
        break;
      }
      case 3:
      case 4: {  // one ungrouped transfer a -> b
        ProgramOp send = base;
        send.type = OpType::send;
        send.peer = b;
        send.stream = stream(rs.stream_a);
        ProgramOp recv = base;
        recv.type = OpType::recv;
        recv.peer = a;
        recv.stream = stream(rs.stream_b);
        ops(a).push_back(send);
        ops(b).push_back(recv);
        break;
      }
      case 5: {  // a grouped ring shift: every member sends to the next and receives from the previous
        const int shift = 1 + rs.b % std::max(1, n - 1);
        for (int m = 0; m < n; ++m) {
          const core::RankId me = comm.ranks[static_cast<size_t>(m)];
          ProgramOp gs;
          gs.type = OpType::group_start;
          gs.origin = base.origin;
          ops(me).push_back(gs);
          ProgramOp send = base;
          send.type = OpType::send;
          send.peer = comm.ranks[static_cast<size_t>((m + shift) % n)];
          send.stream = stream(rs.stream_a + m);
          ProgramOp recv = base;
          recv.type = OpType::recv;
          recv.peer = comm.ranks[static_cast<size_t>((m - shift + n) % n)];
          recv.stream = stream(rs.stream_b + m);
          ops(me).push_back(send);
          ops(me).push_back(recv);
          ProgramOp ge = gs;
          ge.type = OpType::group_end;
          ops(me).push_back(ge);
        }
        break;
      }
      case 6: {  // a compute kernel; a new specialization loads a module under lazy/jit loading
        ProgramOp k;
        k.type = OpType::launch;
        k.kernel = fmt::format("k{}", rs.b % 3);
        k.spec = fmt::format("v{}", rs.count % 2);
        k.stream = stream(rs.stream_a);
        k.duration = rs.duration * core::kUs;
        k.origin = base.origin;
        ops(a).push_back(k);
        break;
      }
      case 7: {  // an event hand-off between two streams of one rank
        ProgramOp rec;
        rec.type = OpType::record;
        rec.event = fmt::format("e{}", event_counter++);
        rec.stream = stream(rs.stream_a);
        rec.origin = base.origin;
        ProgramOp wait = rec;
        wait.type = OpType::wait_event;
        wait.stream = stream(rs.stream_b);
        ops(a).push_back(rec);
        ops(a).push_back(wait);
        break;
      }
      case 8: {  // a host synchronisation, or a cudaMalloc (an implicit device synchronisation, R8)
        ProgramOp sync;
        sync.type = rs.count % 3 == 0 ? OpType::stream_sync : (rs.count % 3 == 1 ? OpType::device_sync : OpType::malloc);
        sync.stream = stream(rs.stream_a);
        if (sync.type == OpType::malloc) sync.count = 4096;
        sync.origin = base.origin;
        ops(a).push_back(sync);
        break;
      }
      case kHazardRound: hazard_round(p, rs, base, i); break;
      case kRaceRound: race_round(p, s, rs, base); break;
      default: {
        ProgramOp sl;
        sl.type = OpType::sleep;
        sl.duration = rs.duration * core::kUs;
        sl.origin = base.origin;
        ops(a).push_back(sl);
      }
    }
  }
  add_loader(p, s);
  // Every rank drains its device at the end, so that nothing is left in flight unobserved.
  for (core::RankId r = 0; r < s.ranks; ++r) {
    ProgramOp sync;
    sync.type = OpType::device_sync;
    sync.origin = "end";
    ops(r).push_back(sync);
  }
  return p;
}

std::string to_string(Perturbation p) {
  switch (p) {
    case Perturbation::extra: return "extra";
    case Perturbation::dropped: return "dropped";
    case Perturbation::swapped: return "swapped";
    case Perturbation::count: return "count";
    case Perturbation::dtype: return "dtype";
    case Perturbation::root: return "root";
  }
  return "?";
}

namespace {

// Two operations of one rank that the communicator matches in the same FIFO.
bool same_channel(const ProgramOp& x, const ProgramOp& y) {
  if (x.comm != y.comm) return false;
  const bool px = x.type == OpType::send || x.type == OpType::recv;
  const bool py = y.type == OpType::send || y.type == OpType::recv;
  if (px != py) return false;
  if (!px) return true;  // collectives share one sequence
  return x.type == y.type && x.peer == y.peer;
}

// NCCL discards a collective of no elements before it takes a place in the order: doubling,
// dropping or reshaping one changes nothing, so it is no perturbation.
bool perturbable(const ProgramOp& op) {
  if (!program::is_comm_op(op.type)) return false;
  return op.type == OpType::send || op.type == OpType::recv || op.count > 0;
}

}  // namespace

Perturbed perturb(const program::Program& p, const PerturbSpec& spec) {
  Perturbed out{p, -1, ""};
  // The perturbed rank must own at least one communication operation.
  std::vector<core::RankId> candidates;
  for (core::RankId r = 0; r < p.num_ranks; ++r)
    for (const ProgramOp& op : p.ranks[static_cast<size_t>(r)][0].ops)
      if (perturbable(op)) {
        candidates.push_back(r);
        break;
      }
  if (candidates.empty()) return out;
  const core::RankId r = candidates[static_cast<size_t>(spec.rank) % candidates.size()];
  out.rank = r;
  auto& ops = out.program.ranks[static_cast<size_t>(r)][0].ops;
  std::vector<size_t> comm_ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (perturbable(ops[i])) comm_ops.push_back(i);
  const size_t at = comm_ops[static_cast<size_t>(spec.op) % comm_ops.size()];
  auto kind = static_cast<Perturbation>(spec.kind % 6);

  if (kind == Perturbation::swapped) {
    std::vector<size_t> partners;
    for (size_t j : comm_ops)
      if (j != at && same_channel(ops[at], ops[j])) partners.push_back(j);
    if (partners.empty()) {
      kind = Perturbation::count;
    } else {
      const size_t j = partners[static_cast<size_t>(spec.op / 7) % partners.size()];
      out.what = fmt::format("rank {} swaps '{}' ({}) and '{}' ({})", r, ops[at].label, ops[at].origin, ops[j].label, ops[j].origin);
      std::swap(ops[at], ops[j]);
      return out;
    }
  }
  if (kind == Perturbation::root) {
    const program::CommDecl* c = nullptr;
    for (const auto& d : p.comms)
      if (d.name == ops[at].comm) c = &d;
    if (ops[at].type != OpType::broadcast || c == nullptr) {
      kind = Perturbation::count;
    } else {
      const auto pos = std::find(c->ranks.begin(), c->ranks.end(), ops[at].peer) - c->ranks.begin();
      ops[at].peer = c->ranks[static_cast<size_t>(pos + 1) % c->ranks.size()];
      out.what = fmt::format("rank {} broadcasts '{}' ({}) from root {}", r, ops[at].label, ops[at].origin, ops[at].peer);
      return out;
    }
  }
  switch (kind) {
    case Perturbation::extra:
      out.what = fmt::format("rank {} posts '{}' ({}) twice", r, ops[at].label, ops[at].origin);
      ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(at) + 1, ops[at]);
      break;
    case Perturbation::dropped:
      out.what = fmt::format("rank {} never posts '{}' ({})", r, ops[at].label, ops[at].origin);
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(at));
      break;
    case Perturbation::dtype:
      ops[at].dtype = ops[at].dtype == core::Dtype::f32 ? core::Dtype::i32 : core::Dtype::f32;
      out.what = fmt::format("rank {} posts '{}' ({}) as {}", r, ops[at].label, ops[at].origin, core::to_string(ops[at].dtype));
      break;
    default:
      ops[at].count += 1 + spec.op % 5;
      out.what = fmt::format("rank {} posts '{}' ({}) with count {}", r, ops[at].label, ops[at].origin, ops[at].count);
      break;
  }
  return out;
}

}  // namespace ppspec::fuzzer
