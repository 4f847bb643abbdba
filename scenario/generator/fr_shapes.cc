#include "scenario/generator/fr_shapes.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iterator>
#include <set>

#include "core/assert.h"
#include "core/rng.h"
#include "scenario/generator/draft.h"

namespace ppspec::generator {
namespace {

using program::OpType;
using program::ProgramOp;

constexpr std::array<std::pair<std::string_view, FrShape>, 8> kShapeNames = {{{"async", FrShape::async},
                                                                              {"sync", FrShape::sync},
                                                                              {"coalesced", FrShape::coalesced},
                                                                              {"batched", FrShape::batched},
                                                                              {"all_to_all", FrShape::all_to_all},
                                                                              {"wrapped", FrShape::wrapped},
                                                                              {"gloo", FrShape::gloo},
                                                                              {"snapshot", FrShape::snapshot}}};

constexpr int64_t kCounts[] = {1, 8, 64, 512, 4096, 65536, 1048576};
constexpr core::Dtype kDtypes[] = {core::Dtype::f32, core::Dtype::bf16, core::Dtype::i64, core::Dtype::i32};

// A pp × tp job's program, step by step, on each rank's one stream.
class ShapeBuilder {
 public:
  ShapeBuilder(FrShape shape, uint64_t seed, const std::string& name, int max_ranks) : shape_(shape), rng_(seed) {
    out_.program.name = name;
    out_.program.file = name + ".toml";
    declare(std::clamp(max_ranks, 2, 8));
  }
  GeneratedProgram run(std::optional<Disturbance> d);

 private:
  uint64_t below(uint64_t n) { return rng_.below(n); }
  bool percent(int p) { return static_cast<int>(below(100)) < p; }
  core::RankId rank_at(int stage, int column) const { return stage * tp_ + column; }
  void declare(int max_ranks);
  void add_comm(const std::string& name, std::vector<core::RankId> ranks);
  ProgramOp comm_op(OpType t, const std::string& comm, int64_t count, core::Dtype dtype, core::RankId peer) const;
  void unit(core::RankId r, std::vector<ProgramOp> ops, const std::string& comm);
  void collective(OpType t, const std::string& comm, const std::vector<core::RankId>& members, core::RankId root);
  void activations(bool batched);
  void pipeline_batch();
  void uneven_all_gather(const std::string& comm, const std::vector<core::RankId>& members);
  void coalesced_group(const std::string& comm, const std::vector<core::RankId>& members);
  void all_to_all();
  void step();
  std::string disturb(Disturbance kind, core::RankId r);

  FrShape shape_;
  core::Rng rng_;
  GeneratedProgram out_;
  Draft draft_{0};
  int pp_ = 1, tp_ = 1;
  std::vector<std::vector<core::RankId>> stages_, columns_;
  std::set<std::string> features_;
};

void ShapeBuilder::declare(int max_ranks) {
  program::Program& p = out_.program;
  p.num_ranks = 2 + static_cast<int>(below(static_cast<uint64_t>(max_ranks - 1)));
  std::vector<int> pps;
  for (int d = 2; d <= p.num_ranks; ++d)
    if (p.num_ranks % d == 0) pps.push_back(d);
  pp_ = pps[below(pps.size())];
  tp_ = p.num_ranks / pp_;
  p.streams = {"s0"};
  std::vector<core::RankId> world;
  for (core::RankId r = 0; r < p.num_ranks; ++r) world.push_back(r);
  add_comm("world", world);
  for (int s = 0; s < pp_; ++s) {
    stages_.emplace_back();
    for (int c = 0; c < tp_; ++c) stages_.back().push_back(rank_at(s, c));
    if (tp_ > 1) add_comm(fmt::format("tp{}", s), stages_.back());
  }
  for (int c = 0; c < tp_; ++c) {
    columns_.emplace_back();
    for (int s = 0; s < pp_; ++s) columns_.back().push_back(rank_at(s, c));
    add_comm(fmt::format("pp{}", c), columns_.back());
  }
  draft_ = Draft(p.num_ranks);
  // Connections at creation (PyTorch's eager init): no host waits at a first contact. A mismatch goes
  // on as NCCL goes on, so that every host makes the calls it would have made: its dump holds them.
  p.config.runtime_connect = false;
  p.config.on_mismatch = core::OnMismatch::emulate;
  p.config.module_loading = core::ModuleLoading::eager;
  p.hang_timeout = 4 * core::kSec;
  features_.insert(fmt::format("pp {} x tp {}", pp_, tp_));
}

void ShapeBuilder::add_comm(const std::string& name, std::vector<core::RankId> ranks) {
  out_.program.comms.push_back(program::CommDecl{name, std::move(ranks)});
}

ProgramOp ShapeBuilder::comm_op(OpType t, const std::string& comm, int64_t count, core::Dtype dtype,
                                core::RankId peer) const {
  ProgramOp op;
  op.type = t;
  op.comm = comm;
  op.count = count;
  op.dtype = dtype;
  op.peer = peer;
  op.stream = "s0";
  return op;
}

void ShapeBuilder::unit(core::RankId r, std::vector<ProgramOp> ops, const std::string& comm) {
  draft_.units(r).push_back(Unit{std::move(ops), comm});
}

ProgramOp group_op(OpType t) {
  ProgramOp op;
  op.type = t;
  return op;
}

void ShapeBuilder::collective(OpType t, const std::string& comm, const std::vector<core::RankId>& members,
                              core::RankId root) {
  const int64_t count = kCounts[below(std::size(kCounts))];
  const core::Dtype dtype = kDtypes[below(std::size(kDtypes))];
  for (core::RankId r : members) unit(r, {comm_op(t, comm, count, dtype, t == OpType::broadcast ? root : -1)}, comm);
}

// Each stage's activations to the next, column by column: one send and its receive, ungrouped, or
// each a batch of one (batch_isend_irecv, as vLLM's send_tensor_dict).
void ShapeBuilder::activations(bool batched) {
  const int64_t count = kCounts[1 + below(std::size(kCounts) - 1)];
  for (int c = 0; c < tp_; ++c)
    for (int s = 0; s + 1 < pp_; ++s) {
      const core::RankId from = rank_at(s, c), to = rank_at(s + 1, c);
      const std::string comm = fmt::format("pp{}", c);
      ProgramOp send = comm_op(OpType::send, comm, count, core::Dtype::bf16, to);
      ProgramOp recv = comm_op(OpType::recv, comm, count, core::Dtype::bf16, from);
      if (!batched) {
        unit(from, {send}, comm);
        unit(to, {recv}, comm);
        continue;
      }
      unit(from, {group_op(OpType::group_start), send, group_op(OpType::group_end)}, comm);
      unit(to, {group_op(OpType::group_start), recv, group_op(OpType::group_end)}, comm);
    }
}

// A middle stage receives from the stage before and sends to the one after in one batch.
void ShapeBuilder::pipeline_batch() {
  const int64_t count = kCounts[2 + below(std::size(kCounts) - 2)];
  for (int c = 0; c < tp_; ++c) {
    const std::string comm = fmt::format("pp{}", c);
    for (int s = 0; s < pp_; ++s) {
      std::vector<ProgramOp> ops{group_op(OpType::group_start)};
      if (s > 0) ops.push_back(comm_op(OpType::recv, comm, count, core::Dtype::bf16, rank_at(s - 1, c)));
      if (s + 1 < pp_) ops.push_back(comm_op(OpType::send, comm, count, core::Dtype::bf16, rank_at(s + 1, c)));
      ops.push_back(group_op(OpType::group_end));
      unit(rank_at(s, c), std::move(ops), comm);
    }
  }
}

// An all_gather of uneven sizes: each member broadcasts its own rows in turn, in one group.
void ShapeBuilder::uneven_all_gather(const std::string& comm, const std::vector<core::RankId>& members) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < members.size(); ++i) rows.push_back(16 * static_cast<int64_t>(1 + below(8)));
  for (core::RankId r : members) {
    std::vector<ProgramOp> ops{group_op(OpType::group_start)};
    for (size_t i = 0; i < members.size(); ++i)
      ops.push_back(comm_op(OpType::broadcast, comm, rows[i], core::Dtype::f32, members[i]));
    ops.push_back(group_op(OpType::group_end));
    unit(r, std::move(ops), comm);
  }
  features_.insert("uneven all_gather");
}

// All_reduces or all_gathers coalesced in one group (FSDP's, _coalescing_manager's).
void ShapeBuilder::coalesced_group(const std::string& comm, const std::vector<core::RankId>& members) {
  const OpType t = percent(50) ? OpType::all_reduce : OpType::all_gather;
  const size_t n = 2 + below(3);
  std::vector<int64_t> counts;
  for (size_t i = 0; i < n; ++i) counts.push_back(kCounts[below(std::size(kCounts) - 1)]);
  for (core::RankId r : members) {
    std::vector<ProgramOp> ops{group_op(OpType::group_start)};
    for (int64_t c : counts) ops.push_back(comm_op(t, comm, c, core::Dtype::f32, -1));
    ops.push_back(group_op(OpType::group_end));
    unit(r, std::move(ops), comm);
  }
  features_.insert(fmt::format("coalesced {}", program::to_string(t)));
}

// An expert-parallel dispatch: rank i sends rows[i][j] to member j (itself included), one group.
void ShapeBuilder::all_to_all() {
  const int n = out_.program.num_ranks;
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(n)));
  for (auto& row : rows)
    for (int64_t& x : row) x = 16 * static_cast<int64_t>(below(9));  // an expert may get no rows
  for (core::RankId r = 0; r < n; ++r) {
    std::vector<ProgramOp> ops{group_op(OpType::group_start)};
    for (core::RankId j = 0; j < n; ++j) {
      ops.push_back(
          comm_op(OpType::send, "world", rows[static_cast<size_t>(r)][static_cast<size_t>(j)], core::Dtype::bf16, j));
      ops.push_back(
          comm_op(OpType::recv, "world", rows[static_cast<size_t>(j)][static_cast<size_t>(r)], core::Dtype::bf16, j));
    }
    ops.push_back(group_op(OpType::group_end));
    unit(r, std::move(ops), "world");
  }
  features_.insert("uneven all_to_all");
}

void ShapeBuilder::step() {
  for (core::RankId r = 0; r < out_.program.num_ranks; ++r) {
    ProgramOp k = group_op(OpType::launch);
    k.stream = "s0";
    k.kernel = "layer";
    k.duration = static_cast<core::Time>(5 + below(40)) * core::kUs;
    draft_.units(r).push_back(Unit{{k}, ""});
  }
  if (shape_ == FrShape::all_to_all) all_to_all();
  for (int s = 0; s < pp_ && tp_ > 1; ++s)
    collective(OpType::all_reduce, fmt::format("tp{}", s), stages_[static_cast<size_t>(s)], -1);
  if (shape_ == FrShape::coalesced) {
    const bool world = tp_ == 1 || percent(40);
    const size_t stage = below(static_cast<uint64_t>(pp_));
    const std::string comm = world ? "world" : fmt::format("tp{}", stage);
    const std::vector<core::RankId>& members = world ? out_.program.comms.front().ranks : stages_[stage];
    percent(50) ? uneven_all_gather(comm, members) : coalesced_group(comm, members);
  }
  if (shape_ == FrShape::batched && percent(50))
    pipeline_batch();
  else
    activations(shape_ == FrShape::batched);
  for (int c = 0; c < tp_; ++c)
    collective(OpType::broadcast, fmt::format("pp{}", c), columns_[static_cast<size_t>(c)], rank_at(pp_ - 1, c));
  if (percent(25)) collective(OpType::all_reduce, "world", out_.program.comms.front().ranks, -1);
}

// One rank gets one call wrong; in a group of several operations, a changed count or dtype changes
// one of them (one member's size of an uneven all_gather, one peer's split of an all_to_all).
std::string ShapeBuilder::disturb(Disturbance kind, core::RankId r) {
  std::vector<Unit>& units = draft_.units(r);
  if (kind == Disturbance::invert) return invert_order(RankUnits{units, r, out_.program});
  std::vector<size_t> comm_units;
  for (size_t i = 0; i < units.size(); ++i)
    if (!units[i].comm.empty() && takes_place(units[i])) comm_units.push_back(i);
  PPSPEC_ASSERT(!comm_units.empty(), "rank {} of a generated job calls nothing", r);
  const size_t at = comm_units[below(comm_units.size())];
  Unit& u = units[at];
  std::vector<size_t> ops;
  for (size_t i = 0; i < u.ops.size(); ++i)
    if (program::is_comm_op(u.ops[i].type)) ops.push_back(i);
  // A whole group's peers or roots are not the user's to get wrong (an all_to_all, an all_gather):
  // one of its sizes is.
  if ((kind == Disturbance::peer || kind == Disturbance::root) && ops.size() > 1) kind = Disturbance::count;
  // An all_to_all moves one tensor of one dtype: one of its sizes can be wrong, not one of its dtypes.
  const bool all_p2p = std::all_of(ops.begin(), ops.end(), [&](size_t i) { return program::is_p2p_op(u.ops[i].type); });
  if (kind == Disturbance::dtype && ops.size() > 1 && all_p2p) kind = Disturbance::count;
  if ((kind == Disturbance::count || kind == Disturbance::dtype) && ops.size() > 1) {
    ProgramOp& op = u.ops[ops[below(ops.size())]];
    if (kind == Disturbance::count) op.count = op.count == 0 ? 16 : op.count * 2;
    if (kind == Disturbance::dtype) op.dtype = op.dtype == core::Dtype::f32 ? core::Dtype::i64 : core::Dtype::f32;
    return fmt::format("rank {} posts one {} of its group on '{}' with {}", r, program::to_string(op.type), u.comm,
                       kind == Disturbance::count ? "twice the count" : "another dtype");
  }
  return generator::disturb(RankUnits{units, r, out_.program}, at, kind,
                            [this](size_t k) { return static_cast<size_t>(below(k)); });
}

GeneratedProgram ShapeBuilder::run(std::optional<Disturbance> d) {
  const bool long_run = shape_ == FrShape::wrapped;
  const int steps = long_run ? 20 + static_cast<int>(below(30)) : 3 + static_cast<int>(below(5));
  for (int s = 0; s < steps; ++s) step();
  if (d) {
    const auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(out_.program.num_ranks)));
    out_.disturbance = disturb(*d, r);
    if (out_.disturbance.empty()) out_.disturbance = disturb(Disturbance::count, r);  // no two groups' calls to invert
    out_.disturbed_rank = r;
    features_.insert("disturbed");
  }
  finish(draft_, ThreadEnds{}, out_.program);
  out_.features.assign(features_.begin(), features_.end());
  program::Program& p = out_.program;
  p.description =
      fmt::format("Generated by `ppspec fidelity --backend flight-recorder --shape {}`: {} steps. Exercises: {}.",
                  to_string(shape_), steps, fmt::join(out_.features, ", "));
  if (!out_.disturbance.empty()) p.description += fmt::format(" Disturbed: {}.", out_.disturbance);
  return std::move(out_);
}

}  // namespace

std::string_view to_string(FrShape s) {
  for (const auto& [name, shape] : kShapeNames)
    if (shape == s) return name;
  return "?";
}

std::optional<FrShape> parse_fr_shape(std::string_view s) {
  for (const auto& [name, shape] : kShapeNames)
    if (name == s) return shape;
  return std::nullopt;
}

std::optional<Disturbance> fr_shape_disturbance(uint64_t index) {
  constexpr auto kinds = std::size(kHardwareDisturbances);
  const uint64_t k = index % (kinds + 1);
  if (k == 0) return std::nullopt;
  return kHardwareDisturbances[k - 1];
}

GeneratedProgram generate_fr_shape(FrShape shape, uint64_t seed, const std::string& name, std::optional<Disturbance> d,
                                   int max_ranks) {
  PPSPEC_ASSERT(shape != FrShape::async, "the async family's programs are the seeded generator's");
  return ShapeBuilder(shape, seed, name, max_ranks).run(d);
}

}  // namespace ppspec::generator
