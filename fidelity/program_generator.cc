#include "fidelity/program_generator.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "core/assert.h"
#include "core/rng.h"

namespace ppspec::fidelity {
namespace {

using program::OpType;
using program::ProgramOp;

// One rank's share of one round: the operations it issues together (a group is one unit, so a
// disturbance never splits it).
struct Unit {
  std::vector<ProgramOp> ops;
  std::string comm;  // the communicator of its communication operations; empty: none
};

// Elements per operation, weighted towards what serving exchanges (a few to a few thousand), with
// zero counts and 1, 4, 16 and 64 MiB payloads among them.
struct CountChoice {
  int64_t count;
  int weight;
};
constexpr CountChoice kCounts[] = {{0, 5},      {1, 10},         {7, 8},         {64, 14},        {1024, 20},
                                   {65536, 14}, {262144, 11},    {1048576, 9},   {4194304, 5},    {16777216, 4}};

ProgramOp plain(OpType t) {
  ProgramOp op;
  op.type = t;
  return op;
}

ProgramOp on_stream(OpType t, std::string stream) {
  ProgramOp op = plain(t);
  op.stream = std::move(stream);
  return op;
}

ProgramOp kernel_op(OpType t, std::string stream, std::string kernel, std::string spec, core::Time duration) {
  ProgramOp op = on_stream(t, std::move(stream));
  op.kernel = std::move(kernel);
  op.spec = std::move(spec);
  op.duration = duration;
  return op;
}

ProgramOp named_op(OpType t, std::string stream, std::string event, std::string graph) {
  ProgramOp op = on_stream(t, std::move(stream));
  op.event = std::move(event);
  op.graph = std::move(graph);
  return op;
}

class Generator {
 public:
  Generator(uint64_t seed, const std::string& name, const GeneratorOptions& opts) : rng_(seed), opts_(opts) {
    out_.program.name = name;
    out_.program.file = name + ".toml";
  }
  GeneratedProgram run();

 private:
  uint64_t below(uint64_t n) { return rng_.below(n); }
  bool percent(int p) { return static_cast<int>(below(100)) < p; }
  void declare();
  void configure();
  void add_round(int index);
  void collective(const program::CommDecl& c, const std::string& label);
  void transfer(const program::CommDecl& c, const std::string& label);
  void exchange(const program::CommDecl& c, const std::string& label);
  void ring(const program::CommDecl& c, const std::string& label);
  void self_exchange(const program::CommDecl& c, const std::string& label);
  void graph_round(const program::CommDecl& c, const std::string& label);
  void local_round(core::RankId r);
  void aux_round(core::RankId r);
  void invert_order();
  void mutate(int kind);
  bool communicates() const;
  void wrong_peer(core::RankId r, Unit& u);
  core::RankId next_member(const std::string& comm, core::RankId rank) const;
  void finish();
  ProgramOp comm_op(OpType t, const program::CommDecl& c, const std::string& label, int64_t count, core::Dtype dtype);
  int64_t pick_count();
  core::Dtype pick_dtype(int64_t count);
  std::string stream() { return out_.program.streams[below(main_streams_)]; }
  const program::CommDecl& pick_comm() { return out_.program.comms[below(out_.program.comms.size())]; }
  void feature(std::string f) { features_.insert(std::move(f)); }
  std::vector<Unit>& units(core::RankId r) { return units_[static_cast<size_t>(r)]; }

  core::Rng rng_;
  GeneratorOptions opts_;
  GeneratedProgram out_;
  size_t main_streams_ = 1;
  std::vector<std::vector<Unit>> units_;      // [rank]: the main thread's units
  std::vector<std::vector<Unit>> aux_units_;  // [rank]: a second host thread's
  std::vector<bool> has_aux_;                 // [rank]: the rank has a second host thread
  std::vector<int> events_;                   // [rank]: events named so far
  int graphs_ = 0;
  std::set<std::string> features_;
};

int64_t Generator::pick_count() {
  int total = 0;
  for (const CountChoice& c : kCounts) total += c.weight;
  int x = static_cast<int>(below(static_cast<uint64_t>(total)));
  for (const CountChoice& c : kCounts) {
    if (x < c.weight) return c.count;
    x -= c.weight;
  }
  return 1;
}

core::Dtype Generator::pick_dtype(int64_t count) {
  // Payloads stay at most 64 MiB per rank: the largest counts are bytes or floats.
  if (count >= 16777216) return percent(50) ? core::Dtype::u8 : core::Dtype::f32;
  constexpr core::Dtype kTypes[] = {core::Dtype::f32, core::Dtype::f32, core::Dtype::i32, core::Dtype::i64,
                                    core::Dtype::bf16, core::Dtype::u8};
  return kTypes[below(std::size(kTypes))];
}

ProgramOp Generator::comm_op(OpType t, const program::CommDecl& c, const std::string& label, int64_t count,
                             core::Dtype dtype) {
  ProgramOp op;
  op.type = t;
  op.comm = c.name;
  if (opts_.labels) op.label = label;
  op.count = count;
  op.dtype = dtype;
  if (count == 0) feature("zero-count");
  if (count * static_cast<int64_t>(core::dtype_size(dtype)) >= (int64_t{4} << 20)) feature("large (>= 4 MiB)");
  return op;
}

void Generator::declare() {
  program::Program& p = out_.program;
  const int max_ranks = std::clamp(opts_.max_ranks, 2, 8);
  p.num_ranks = percent(opts_.two_rank_percent) || max_ranks == 2 ? 2 : 3 + static_cast<int>(below(static_cast<uint64_t>(max_ranks - 2)));
  if (p.num_ranks > 2) feature(fmt::format("{} ranks", p.num_ranks));
  main_streams_ = 1 + below(3);
  p.streams.clear();
  for (size_t i = 0; i < main_streams_; ++i) p.streams.push_back(fmt::format("s{}", i));
  if (main_streams_ > 1) feature("several streams");
  program::CommDecl world{"world", {}};
  for (core::RankId r = 0; r < p.num_ranks; ++r) world.ranks.push_back(r);
  p.comms.push_back(world);
  const uint64_t extra = below(3);
  for (uint64_t i = 0; i < extra; ++i) {
    program::CommDecl c{fmt::format("c{}", i + 1), {}};
    for (core::RankId r = 0; r < p.num_ranks; ++r)
      if (p.num_ranks == 2 || percent(60)) c.ranks.push_back(r);
    for (core::RankId r = 0; c.ranks.size() < 2; ++r)
      if (std::find(c.ranks.begin(), c.ranks.end(), r) == c.ranks.end()) c.ranks.push_back(r);
    std::sort(c.ranks.begin(), c.ranks.end());
    p.comms.push_back(c);
  }
  if (p.comms.size() > 1) feature("several communicators");
  units_.assign(static_cast<size_t>(p.num_ranks), {});
  aux_units_.assign(static_cast<size_t>(p.num_ranks), {});
  has_aux_.assign(static_cast<size_t>(p.num_ranks), false);
  events_.assign(static_cast<size_t>(p.num_ranks), 0);
  if (percent(20)) {
    p.streams.push_back("aux");  // the second thread's own stream: it never meets a capture
    feature("two host threads");
    for (core::RankId r = 0; r < p.num_ranks; ++r) has_aux_[static_cast<size_t>(r)] = r == 0 || percent(50);
  }
}

void Generator::configure() {
  sim::SimConfig& c = out_.program.config;
  // Only what the real backend applies varies; the simulator-only knobs keep their defaults, which
  // are today's hardware (DESIGN §3), so that a disagreement is the simulator's, not a knob's.
  const uint64_t loading = below(10);
  c.module_loading = loading < 5 ? core::ModuleLoading::lazy : (loading < 8 ? core::ModuleLoading::eager : core::ModuleLoading::jit);
  feature(fmt::format("{} loading", core::to_string(c.module_loading)));
  c.runtime_connect = !percent(15);
  if (!c.runtime_connect) feature("runtime_connect = false");
  out_.program.hang_timeout = 4 * core::kSec;
}


void Generator::collective(const program::CommDecl& c, const std::string& label) {
  const uint64_t k = below(3);
  const OpType t = k == 0 ? OpType::all_reduce : (k == 1 ? OpType::broadcast : OpType::all_gather);
  const int64_t count = pick_count();
  const core::Dtype dtype = pick_dtype(count);
  const core::RankId root = c.ranks[below(c.ranks.size())];
  feature(std::string(program::to_string(t)));
  for (core::RankId m : c.ranks) {
    ProgramOp op = comm_op(t, c, label, count, dtype);
    op.peer = t == OpType::broadcast ? root : -1;
    op.stream = stream();
    units(m).push_back(Unit{{op}, c.name});
  }
}

// One ungrouped send a -> b: first contact, and a send that may spin until its receive is posted.
void Generator::transfer(const program::CommDecl& c, const std::string& label) {
  const size_t i = below(c.ranks.size());
  const size_t j = (i + 1 + below(c.ranks.size() - 1)) % c.ranks.size();
  const core::RankId a = c.ranks[i], b = c.ranks[j];
  const int64_t count = pick_count();
  const core::Dtype dtype = pick_dtype(count);
  ProgramOp send = comm_op(OpType::send, c, label, count, dtype);
  send.peer = b;
  send.stream = stream();
  ProgramOp recv = comm_op(OpType::recv, c, label, count, dtype);
  recv.peer = a;
  recv.stream = stream();
  units(a).push_back(Unit{{send}, c.name});
  units(b).push_back(Unit{{recv}, c.name});
  feature("ungrouped p2p");
}

// a <-> b, grouped (the correct way) or ungrouped, each side sending first or receiving first.
void Generator::exchange(const program::CommDecl& c, const std::string& label) {
  const size_t i = below(c.ranks.size());
  const size_t j = (i + 1 + below(c.ranks.size() - 1)) % c.ranks.size();
  const core::RankId side[2] = {c.ranks[i], c.ranks[j]};
  const int64_t count = pick_count();
  const core::Dtype dtype = pick_dtype(count);
  const bool grouped = percent(65);
  feature(grouped ? "grouped p2p" : "ungrouped exchange");
  for (int s = 0; s < 2; ++s) {
    ProgramOp send = comm_op(OpType::send, c, label, count, dtype);
    send.peer = side[1 - s];
    send.stream = stream();
    ProgramOp recv = comm_op(OpType::recv, c, label, count, dtype);
    recv.peer = side[1 - s];
    recv.stream = grouped || percent(80) ? send.stream : stream();
    Unit u{{}, c.name};
    if (grouped) u.ops.push_back(plain(OpType::group_start));
    if (percent(50)) {
      u.ops.push_back(send);
      u.ops.push_back(recv);
    } else {
      u.ops.push_back(recv);
      u.ops.push_back(send);
    }
    if (grouped) u.ops.push_back(plain(OpType::group_end));
    units(side[s]).push_back(std::move(u));
  }
}

// Every member sends to the next and receives from the previous, in one group.
void Generator::ring(const program::CommDecl& c, const std::string& label) {
  const auto n = c.ranks.size();
  const int64_t count = pick_count();
  const core::Dtype dtype = pick_dtype(count);
  feature("grouped p2p");
  for (size_t m = 0; m < n; ++m) {
    ProgramOp send = comm_op(OpType::send, c, label, count, dtype);
    send.peer = c.ranks[(m + 1) % n];
    send.stream = stream();
    ProgramOp recv = comm_op(OpType::recv, c, label, count, dtype);
    recv.peer = c.ranks[(m + n - 1) % n];
    recv.stream = send.stream;
    units(c.ranks[m]).push_back(Unit{{plain(OpType::group_start), send, recv, plain(OpType::group_end)}, c.name});
  }
}

// An all-to-all's own block: a send to oneself and its receive, in one group (legal NCCL); now and
// then the receive is missing, which NCCL rejects at group end (ncclInvalidUsage).
void Generator::self_exchange(const program::CommDecl& c, const std::string& label) {
  const core::RankId r = c.ranks[below(c.ranks.size())];
  const int64_t count = std::max<int64_t>(1, pick_count() % 65536);
  ProgramOp send = comm_op(OpType::send, c, label, count, core::Dtype::f32);
  send.peer = r;
  send.stream = stream();
  ProgramOp recv = send;
  recv.type = OpType::recv;
  const bool matched = !percent(15) || !opts_.graphs_and_usage_errors;
  Unit u{{plain(OpType::group_start), send}, c.name};
  if (matched) u.ops.push_back(recv);
  u.ops.push_back(plain(OpType::group_end));
  units(r).push_back(std::move(u));
  feature(matched ? "self p2p" : "unmatched self p2p");
}

// All members capture one communication round into a graph, then replay it once or twice (R9).
void Generator::graph_round(const program::CommDecl& c, const std::string& label) {
  const std::string graph = fmt::format("g{}", graphs_++);
  const bool p2p = c.ranks.size() == 2 && percent(40);
  const int64_t count = std::min<int64_t>(pick_count(), 65536);
  const int64_t launches = 1 + static_cast<int64_t>(below(2));
  feature("graph");
  for (size_t m = 0; m < c.ranks.size(); ++m) {
    const std::string s = stream();
    Unit u{{on_stream(OpType::capture_begin, s)}, c.name};
    if (p2p) {
      ProgramOp send = comm_op(OpType::send, c, label, count, core::Dtype::f32);
      send.peer = c.ranks[1 - m];
      send.stream = s;
      ProgramOp recv = send;
      recv.type = OpType::recv;
      u.ops.insert(u.ops.end(), {plain(OpType::group_start), send, recv, plain(OpType::group_end)});
    } else {
      ProgramOp op = comm_op(OpType::all_reduce, c, label, count, core::Dtype::f32);
      op.stream = s;
      u.ops.push_back(op);
    }
    u.ops.push_back(named_op(OpType::capture_end, s, "", graph));
    for (int64_t k = 0; k < launches; ++k) u.ops.push_back(named_op(OpType::graph_launch, s, "", graph));
    units(c.ranks[m]).push_back(std::move(u));
  }
}

// Work of one rank alone: kernels (a new specialization loads a module under lazy or jit loading),
// event hand-offs between streams, syncs, allocations, host delays.
void Generator::local_round(core::RankId r) {
  Unit u;
  const uint64_t k = below(10);
  if (k < 3) {
    u.ops.push_back(kernel_op(OpType::launch, stream(), fmt::format("k{}", below(2)), fmt::format("v{}", below(4)),
                              static_cast<core::Time>(5 + below(50)) * core::kUs));
    feature("kernels");
  } else if (k == 3) {
    u.ops.push_back(kernel_op(OpType::preload, "", fmt::format("k{}", below(2)), fmt::format("v{}", below(4)), -1));
    feature("preload");
  } else if (k < 6) {
    const std::string event = fmt::format("e{}", events_[static_cast<size_t>(r)]++);
    u.ops.push_back(named_op(OpType::record, stream(), event, ""));
    if (percent(70))
      u.ops.push_back(named_op(OpType::wait_event, stream(), event, ""));
    else
      u.ops.push_back(named_op(OpType::event_sync, "", event, ""));
    feature("events");
  } else if (k == 6) {
    u.ops.push_back(on_stream(OpType::stream_sync, stream()));
    feature("stream sync");
  } else if (k == 7) {
    u.ops.push_back(plain(OpType::device_sync));
    feature("device sync");
  } else if (k == 8) {
    u.ops.push_back(plain(OpType::malloc));
    u.ops.back().count = int64_t{1024} << below(17);
    feature("malloc");
  } else {
    u.ops.push_back(kernel_op(OpType::sleep, "", "", "", static_cast<core::Time>(10 + below(200)) * core::kUs));
  }
  units(r).push_back(std::move(u));
}

// The second host thread: module loads, allocations and syncs on the rank's device while the main
// thread communicates (R8's context lock).
void Generator::aux_round(core::RankId r) {
  Unit u;
  const uint64_t k = below(4);
  if (k == 0)
    u.ops.push_back(kernel_op(OpType::launch, "aux", "aux", fmt::format("v{}", below(4)), 20 * core::kUs));
  else if (k == 1)
    u.ops.push_back(plain(OpType::malloc));  // 1 byte: the allocation's size does not matter, its implicit sync does
  else if (k == 2)
    u.ops.push_back(plain(OpType::device_sync));
  else
    u.ops.push_back(kernel_op(OpType::sleep, "", "", "", static_cast<core::Time>(10 + below(300)) * core::kUs));
  aux_units_[static_cast<size_t>(r)].push_back(std::move(u));
}

void Generator::add_round(int index) {
  const std::string label = fmt::format("r{}", index);
  const program::CommDecl& c = pick_comm();
  const program::Program& p = out_.program;
  const auto any_aux = std::find(has_aux_.begin(), has_aux_.end(), true) != has_aux_.end();
  const uint64_t k = below(100);
  if (k < 22) return collective(c, label);
  if (k < 31) return transfer(c, label);
  if (k < 44) return c.ranks.size() >= 3 && percent(50) ? ring(c, label) : exchange(c, label);
  if (k < 47) return self_exchange(c, label);
  if (k < 52 && !any_aux && opts_.graphs_and_usage_errors) return graph_round(c, label);
  const auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(p.num_ranks)));
  if (k >= 90 && has_aux_[static_cast<size_t>(r)]) return aux_round(r);
  local_round(r);
}

// One rank issues two rounds of different communicators in the other order than its peers.
void Generator::invert_order() {
  const auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(out_.program.num_ranks)));
  std::vector<Unit>& us = units(r);
  std::vector<size_t> comm_units;
  for (size_t i = 0; i < us.size(); ++i)
    if (!us[i].comm.empty()) comm_units.push_back(i);
  for (size_t k = 0; k + 1 < comm_units.size(); ++k) {
    const size_t i = comm_units[k], j = comm_units[k + 1];
    if (us[i].comm == us[j].comm) continue;
    std::swap(us[i], us[j]);
    out_.disturbance = fmt::format("rank {} issues its rounds on '{}' and '{}' in the other order", r, us[j].comm, us[i].comm);
    feature("inverted order");
    return;
  }
}

// One rank gets one communication round wrong: dropped, posted twice, another count, dtype or root.
void Generator::mutate(int kind) {
  const int n = out_.program.num_ranks;
  auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(n)));
  std::vector<size_t> comm_units;  // a graph's capture is not repeated: a graph is captured once
  // A disturbance asked for lands on the next rank that communicates; a random one may miss.
  for (int tries = 0; tries < (kind == kRandomDisturbance ? 1 : n) && comm_units.empty(); ++tries) {
    if (tries > 0) r = (r + 1) % n;
    const std::vector<Unit>& mine = units(r);
    for (size_t i = 0; i < mine.size(); ++i)
      if (!mine[i].comm.empty() && mine[i].ops.front().type != OpType::capture_begin) comm_units.push_back(i);
  }
  if (comm_units.empty()) return;
  std::vector<Unit>& us = units(r);
  const size_t at = comm_units[below(comm_units.size())];
  if (kind == kRandomDisturbance) kind = static_cast<int>(below(5));  // drawn here: a seed's program is what it always was
  auto has = [&](OpType t) { return std::any_of(us[at].ops.begin(), us[at].ops.end(), [t](const ProgramOp& op) { return op.type == t; }); };
  if (kind == kRoot && !has(OpType::broadcast)) kind = kCount;
  if (kind == kPeer && !has(OpType::send) && !has(OpType::recv)) kind = kCount;
  if (kind == kPeer) return wrong_peer(r, us[at]);
  const std::string what = us[at].ops.size() == 1 ? std::string(program::to_string(us[at].ops[0].type)) : "group";
  if (kind == kDrop) {
    out_.disturbance = fmt::format("rank {} never posts its {} '{}'", r, what, us[at].comm);
    us.erase(us.begin() + static_cast<std::ptrdiff_t>(at));
  } else if (kind == kDouble) {
    out_.disturbance = fmt::format("rank {} posts its {} on '{}' twice", r, what, us[at].comm);
    us.insert(us.begin() + static_cast<std::ptrdiff_t>(at), us[at]);
  } else {
    for (ProgramOp& op : us[at].ops) {
      if (!program::is_comm_op(op.type)) continue;
      if (kind == kCount) op.count = op.count == 0 ? 3 : op.count * 2;
      if (kind == kDtype) op.dtype = op.dtype == core::Dtype::f32 ? core::Dtype::i64 : core::Dtype::f32;
      if (kind == kRoot && op.type == OpType::broadcast) op.peer = next_member(us[at].comm, op.peer);
    }
    constexpr const char* kWhat[] = {"", "", "twice the count", "another dtype", "another root"};
    out_.disturbance = fmt::format("rank {} posts its {} on '{}' with {}", r, what, us[at].comm, kWhat[kind]);
  }
  feature("mutated");
}

// The member of `comm` after `rank` (by global rank, cyclically): another root for its broadcast.
core::RankId Generator::next_member(const std::string& comm, core::RankId rank) const {
  for (const program::CommDecl& c : out_.program.comms) {
    if (c.name != comm) continue;
    for (core::RankId k = 1; k <= out_.program.num_ranks; ++k) {
      const core::RankId r = (rank + k) % out_.program.num_ranks;
      if (std::find(c.ranks.begin(), c.ranks.end(), r) != c.ranks.end()) return r;
    }
  }
  return rank;
}

bool Generator::communicates() const {
  for (const auto& us : units_)
    for (const Unit& u : us)
      if (!u.comm.empty()) return true;
  return false;
}

// One rank sends to, or receives from, another member than its peer.
void Generator::wrong_peer(core::RankId r, Unit& u) {
  const program::CommDecl* comm = nullptr;
  for (const program::CommDecl& c : out_.program.comms)
    if (c.name == u.comm) comm = &c;
  PPSPEC_ASSERT(comm != nullptr, "a unit on an undeclared communicator '{}'", u.comm);
  for (ProgramOp& op : u.ops) {
    if ((op.type != OpType::send && op.type != OpType::recv) || op.peer == r) continue;  // not a send to oneself
    std::vector<core::RankId> others;
    for (core::RankId m : comm->ranks)
      if (m != op.peer && m != r) others.push_back(m);
    if (others.empty()) continue;  // two members: the only other peer is oneself
    const core::RankId was = op.peer;
    op.peer = others[below(others.size())];
    out_.disturbance = fmt::format("rank {} {} rank {} instead of rank {} on '{}'", r, op.type == OpType::send ? "sends to" : "receives from",
                                   op.peer, was, u.comm);
    feature("mutated");
    return;
  }
  // No third member to point at: a changed count instead.
  for (ProgramOp& op : u.ops)
    if (program::is_comm_op(op.type)) op.count = op.count == 0 ? 3 : op.count * 2;
  out_.disturbance = fmt::format("rank {} posts its group on '{}' with twice the count", r, u.comm);
  feature("mutated");
}

void Generator::finish() {
  program::Program& p = out_.program;
  p.ranks.assign(static_cast<size_t>(p.num_ranks), {});
  for (core::RankId r = 0; r < p.num_ranks; ++r) {
    auto flatten = [](const std::vector<Unit>& us, program::ThreadProgram& t) {
      for (const Unit& u : us) t.ops.insert(t.ops.end(), u.ops.begin(), u.ops.end());
      t.ops.push_back(plain(OpType::device_sync));  // nothing is left in flight unobserved
    };
    auto& threads = p.ranks[static_cast<size_t>(r)];
    threads.push_back(program::ThreadProgram{});
    flatten(units(r), threads.back());
    if (!has_aux_[static_cast<size_t>(r)]) continue;
    threads.push_back(program::ThreadProgram{});
    threads.back().name = "helper";
    flatten(aux_units_[static_cast<size_t>(r)], threads.back());
  }
  out_.features.assign(features_.begin(), features_.end());
  p.description = fmt::format("Generated by `ppspec fidelity`. Exercises: {}.", fmt::join(out_.features, ", "));
  if (!out_.disturbance.empty()) p.description += fmt::format(" Disturbed: {}.", out_.disturbance);
}

GeneratedProgram Generator::run() {
  declare();
  configure();
  const int rounds = 2 + static_cast<int>(below(static_cast<uint64_t>(std::max(1, opts_.max_rounds - 1))));
  for (int i = 0; i < rounds; ++i) add_round(i);
  if (opts_.disturb == kRandomDisturbance) {
    if (percent(30)) invert_order();
    if (percent(25)) mutate(kRandomDisturbance);
  } else if (!communicates()) {
    // A disturbance needs communication to disturb: one collective round first.
    collective(out_.program.comms.front(), fmt::format("r{}", rounds));
    opts_.disturb == kInvert ? invert_order() : mutate(opts_.disturb);
    if (out_.disturbance.empty()) mutate(kCount);
  } else if (opts_.disturb == kInvert) {
    invert_order();
    if (out_.disturbance.empty()) mutate(kCount);  // no two rounds of different communicators to invert
  } else {
    mutate(opts_.disturb);
  }
  finish();
  PPSPEC_ASSERT(out_.program.ranks.size() == static_cast<size_t>(out_.program.num_ranks), "one op list per rank");
  return std::move(out_);
}

}  // namespace

GeneratedProgram generate_program(uint64_t seed, const std::string& name, const GeneratorOptions& opts) {
  return Generator(seed, name, opts).run();
}

}  // namespace ppspec::fidelity
