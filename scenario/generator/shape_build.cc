// A Shape resolved into rounds (round.h) and built by the one builder (draft.h).
#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "core/assert.h"
#include "scenario/generator/draft.h"
#include "scenario/generator/shape.h"

namespace ppspec::generator {
namespace {

using program::OpType;

constexpr core::Dtype kShapeDtypes[] = {core::Dtype::f32, core::Dtype::i32, core::Dtype::i64, core::Dtype::u8,
                                        core::Dtype::f16};

std::vector<core::RankId> members_of_mask(uint32_t mask, int ranks) {
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

program::CommDecl all_ranks(std::string name, int ranks) {
  program::CommDecl c{std::move(name), {}};
  for (int r = 0; r < ranks; ++r) c.ranks.push_back(r);
  return c;
}

bool breaks_round_order(const Shape& s) {
  return s.race.on || std::any_of(s.rounds.begin(), s.rounds.end(), [](const RoundSpec& r) {
           return r.kind == RoundKind::blocking_hazard || r.kind == RoundKind::loader_race;
         });
}

// Everything but the ranks' threads; "early", over every rank, carries the hazard rounds' early
// receives.
program::Program skeleton(const Shape& s) {
  program::Program p;
  p.name = "generated";
  p.file = "generated.toml";
  p.num_ranks = s.ranks;
  p.streams.clear();
  for (int i = 0; i < s.streams; ++i) p.streams.push_back(fmt::format("s{}", i));
  p.comms.push_back(all_ranks("world", s.ranks));
  for (size_t i = 0; i < s.comm_masks.size(); ++i)
    p.comms.push_back(program::CommDecl{fmt::format("c{}", i + 1), members_of_mask(s.comm_masks[i], s.ranks)});
  if (breaks_round_order(s)) p.comms.push_back(all_ranks("early", s.ranks));
  core::WorldConfig& cfg = p.config;
  cfg.concurrency = s.config.concurrency == 0 ? core::Concurrency::ok : core::Concurrency::serial;
  cfg.eager_bytes = s.config.eager == 0 ? 0 : (s.config.eager == 1 ? 64 : 1 << 20);
  cfg.runtime_connect = s.config.runtime_connect;
  cfg.module_loading = s.config.loading == 0
                           ? core::ModuleLoading::eager
                           : (s.config.loading == 1 ? core::ModuleLoading::lazy : core::ModuleLoading::jit);
  cfg.jitter = s.config.jitter_pct / 100.0;
  cfg.max_steps = 2'000'000;
  return p;
}

class Resolver {
 public:
  Resolver(const program::Program& p, const Shape& s) : p_(p), s_(s) {}
  std::optional<RoundBody> resolve(const RoundSpec& rs, size_t round);

 private:
  std::string stream(int i) const { return p_.streams[static_cast<size_t>(i) % p_.streams.size()]; }
  std::vector<std::string> streams(int first, size_t n) const;
  BlockingHazard hazard(const RoundSpec& rs, size_t round) const;
  std::optional<RoundBody> race(const RoundSpec& rs) const;
  const program::Program& p_;
  const Shape& s_;
  int events_ = 0;
};

std::vector<std::string> Resolver::streams(int first, size_t n) const {
  std::vector<std::string> v;
  for (size_t m = 0; m < n; ++m) v.push_back(stream(first + static_cast<int>(m)));
  return v;
}

std::optional<RoundBody> Resolver::resolve(const RoundSpec& rs, size_t round) {
  const program::CommDecl& comm = p_.comms[static_cast<size_t>(rs.comm) % p_.comms.size()];
  const auto n = static_cast<int>(comm.ranks.size());
  const core::RankId a = comm.ranks[static_cast<size_t>(rs.a % n)];
  core::RankId b = comm.ranks[static_cast<size_t>(rs.b % n)];
  if (b == a) b = comm.ranks[static_cast<size_t>((rs.b + 1) % n)];
  const Payload pl{rs.count, kShapeDtypes[rs.dtype % 5]};
  const auto members = comm.ranks.size();
  switch (rs.kind) {
    case RoundKind::collective:
      return Collective{rs.collective, comm.name, comm.ranks, a, pl, streams(rs.stream_a, members)};
    case RoundKind::transfer: return Transfer{comm.name, a, b, pl, stream(rs.stream_a), stream(rs.stream_b)};
    case RoundKind::ring:
      return Ring{comm.name,
                  comm.ranks,
                  1 + rs.b % std::max(1, n - 1),
                  pl,
                  streams(rs.stream_a, members),
                  streams(rs.stream_b, members)};
    case RoundKind::launch:
      return Launch{a, stream(rs.stream_a), fmt::format("k{}", rs.b % 3), fmt::format("v{}", rs.count % 2),
                    rs.duration * core::kUs};
    case RoundKind::event_handoff:
      return EventHandoff{a, fmt::format("e{}", events_++), stream(rs.stream_a), OpType::wait_event,
                          stream(rs.stream_b)};
    case RoundKind::host_call: {
      // A host synchronisation, or a cudaMalloc (an implicit device synchronisation, R8).
      const OpType t =
          rs.count % 3 == 0 ? OpType::stream_sync : (rs.count % 3 == 1 ? OpType::device_sync : OpType::malloc);
      return HostCall{a, t, stream(rs.stream_a), t == OpType::malloc ? 4096 : 1};
    }
    case RoundKind::sleep: return Sleep{a, rs.duration * core::kUs};
    case RoundKind::blocking_hazard: return hazard(rs, round);
    case RoundKind::loader_race: return race(rs);
    default: PPSPEC_ASSERT(false, "a Shape draws no {} round", static_cast<int>(rs.kind));
  }
  return std::nullopt;
}

// The sender and the receiver over every rank (on "early"), the call as count % 3 picks it.
BlockingHazard Resolver::hazard(const RoundSpec& rs, size_t round) const {
  const int n = s_.ranks;
  BlockingHazard h;
  h.sender = rs.a % n;
  h.receiver = rs.b % n;
  if (h.receiver == h.sender) h.receiver = (h.receiver + 1) % n;
  h.call = rs.count % 3 == 0 ? OpType::device_sync : (rs.count % 3 == 1 ? OpType::malloc : OpType::launch);
  h.call_stream = stream(rs.stream_b + 1);
  if (h.call == OpType::launch) h.call_kernel = fmt::format("h{}", round);
  h.sender_stream = stream(rs.stream_a);
  h.receiver_stream = stream(rs.stream_b);
  h.variant = static_cast<BlockingHazard::Sender>(rs.duration % 3);
  h.payload = Payload{rs.count, kShapeDtypes[rs.dtype % 5]};
  return h;
}

// Three distinct ranks: the loader's, a and c; none without a loader thread or a third rank.
std::optional<RoundBody> Resolver::race(const RoundSpec& rs) const {
  const int n = s_.ranks;
  if (!s_.race.on || n < 3) return std::nullopt;  // gen_race_shape makes none then
  LoaderRace l;
  l.loader = s_.race.rank % n;
  l.a = (l.loader + 1 + rs.a % (n - 1)) % n;
  l.c = (l.loader + 1 + rs.b % (n - 1)) % n;
  if (l.c == l.a) l.c = (l.a + 1) % n == l.loader ? (l.a + 2) % n : (l.a + 1) % n;
  l.x_stream = stream(rs.stream_a);
  l.y_stream = stream(rs.stream_a + 1);  // the loader rank's y does not queue behind its x, unless one stream
  l.payload = Payload{rs.count, kShapeDtypes[rs.dtype % 5]};
  return l;
}

// The loader thread: its preload takes the context lock at a moment the schedule picks.
void add_loader(Draft& d, const Shape& s) {
  if (!s.race.on) return;
  const core::RankId r = s.race.rank % s.ranks;
  d.ranks[static_cast<size_t>(r)].has_second = true;
  add_round(d, Round{Sleep{r, s.race.sleep_us * core::kUs}, "", "loader", Thread::second});
  add_round(d, Round{Preload{r, "raced", ""}, "", "loader", Thread::second});
}

}  // namespace

program::Program build(const Shape& s) {
  program::Program p = skeleton(s);
  Draft d(s.ranks);
  Resolver resolver(p, s);
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    std::optional<RoundBody> body = resolver.resolve(s.rounds[i], i);
    if (body) add_round(d, Round{std::move(*body), fmt::format("r{}", i), fmt::format("round {}", i), Thread::main});
  }
  add_loader(d, s);
  finish(d, ThreadEnds{"loader", false, "end"}, p);
  return p;
}

}  // namespace ppspec::generator
