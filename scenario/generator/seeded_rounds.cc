// The seeded front-end's rounds: each drawn in the order the first version drew it, where
// arguments evaluated right to left made that order (a seed's program must never change).
#include <algorithm>
#include <fmt/format.h>

#include "scenario/generator/seeded_generator.h"

namespace ppspec::generator::seeded {
namespace {

using program::OpType;

// Elements per operation, weighted towards what serving exchanges (a few to a few thousand), with
// zero counts and 1, 4, 16 and 64 MiB payloads among them.
struct CountChoice {
  int64_t count;
  int weight;
};
constexpr CountChoice kCounts[] = {{0, 5},      {1, 10},      {7, 8},       {64, 14},     {1024, 20},
                                   {65536, 14}, {262144, 11}, {1048576, 9}, {4194304, 5}, {16777216, 4}};

}  // namespace

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
  constexpr core::Dtype kTypes[] = {core::Dtype::f32, core::Dtype::f32,  core::Dtype::i32,
                                    core::Dtype::i64, core::Dtype::bf16, core::Dtype::u8};
  return kTypes[below(std::size(kTypes))];
}

Payload Generator::pick_payload() {
  Payload pl;
  pl.count = pick_count();
  pl.dtype = pick_dtype(pl.count);
  note_payload(pl);
  return pl;
}

void Generator::note_payload(const Payload& pl) {
  if (pl.count == 0) feature("zero-count");
  if (pl.count * static_cast<int64_t>(core::dtype_size(pl.dtype)) >= (int64_t{4} << 20)) feature("large (>= 4 MiB)");
}

std::vector<std::string> Generator::streams(size_t n) {
  std::vector<std::string> s;
  for (size_t i = 0; i < n; ++i) s.push_back(stream());
  return s;
}

Collective Generator::collective(const program::CommDecl& c) {
  const uint64_t k = below(3);
  Collective r;
  r.type = k == 0 ? OpType::all_reduce : (k == 1 ? OpType::broadcast : OpType::all_gather);
  r.comm = c.name;
  r.members = c.ranks;
  r.payload = pick_payload();
  r.root = c.ranks[below(c.ranks.size())];
  r.streams = streams(c.ranks.size());
  feature(std::string(program::to_string(r.type)));
  return r;
}

Transfer Generator::transfer(const program::CommDecl& c) {
  const size_t i = below(c.ranks.size());
  const size_t j = (i + 1 + below(c.ranks.size() - 1)) % c.ranks.size();
  Transfer t{c.name, c.ranks[i], c.ranks[j], pick_payload(), "", ""};
  t.send_stream = stream();
  t.recv_stream = stream();
  feature("ungrouped p2p");
  return t;
}

Exchange Generator::exchange(const program::CommDecl& c) {
  const size_t i = below(c.ranks.size());
  const size_t j = (i + 1 + below(c.ranks.size() - 1)) % c.ranks.size();
  Exchange e;
  e.comm = c.name;
  e.sides[0].rank = c.ranks[i];
  e.sides[1].rank = c.ranks[j];
  e.payload = pick_payload();
  e.grouped = percent(65);
  feature(e.grouped ? "grouped p2p" : "ungrouped exchange");
  for (Exchange::Side& s : e.sides) {
    s.send_stream = stream();
    s.recv_stream = e.grouped || percent(80) ? s.send_stream : stream();
    s.send_first = percent(50);
  }
  return e;
}

Ring Generator::ring(const program::CommDecl& c) {
  Ring g;
  g.comm = c.name;
  g.members = c.ranks;
  g.payload = pick_payload();
  g.send_streams = streams(c.ranks.size());
  g.recv_streams = g.send_streams;
  feature("grouped p2p");
  return g;
}

SelfExchange Generator::self_exchange(const program::CommDecl& c) {
  SelfExchange s;
  s.comm = c.name;
  s.rank = c.ranks[below(c.ranks.size())];
  s.count = std::max<int64_t>(1, pick_count() % 65536);
  note_payload(Payload{s.count, core::Dtype::f32});
  s.stream = stream();
  s.matched = !percent(15) || !opts_.graphs_and_usage_errors || !opts_.usage_errors;  // the draw is made either way
  feature(s.matched ? "self p2p" : "unmatched self p2p");
  return s;
}

GraphCapture Generator::graph(const program::CommDecl& c) {
  GraphCapture g;
  g.comm = c.name;
  g.members = c.ranks;
  g.graph = fmt::format("g{}", graphs_++);
  g.p2p = c.ranks.size() == 2 && percent(40);
  g.count = std::min<int64_t>(pick_count(), 65536);
  note_payload(Payload{g.count, core::Dtype::f32});
  g.launches = 1 + static_cast<int>(below(2));
  g.streams = streams(c.ranks.size());
  feature("graph");
  return g;
}

// Work of one rank alone: kernels (a new specialization loads a module under lazy or jit loading),
// event hand-offs between streams, syncs, allocations, host delays.
RoundBody Generator::local(core::RankId r) {
  const uint64_t k = below(10);
  if (k < 4) {
    // Drawn last to first: the duration, the spec, the kernel, the stream.
    const auto duration = k < 3 ? static_cast<core::Time>(5 + below(50)) * core::kUs : -1;
    const std::string spec = fmt::format("v{}", below(4));
    const std::string kernel = fmt::format("k{}", below(2));
    feature(k < 3 ? "kernels" : "preload");
    if (k == 3) return Preload{r, kernel, spec};
    return Launch{r, stream(), kernel, spec, duration};
  }
  if (k < 6) {
    EventHandoff e{r, fmt::format("e{}", events_[static_cast<size_t>(r)]++), stream(), OpType::wait_event, ""};
    if (percent(70))
      e.wait_stream = stream();
    else
      e.wait = OpType::event_sync;
    feature("events");
    return e;
  }
  if (k == 9) return Sleep{r, static_cast<core::Time>(10 + below(200)) * core::kUs};
  constexpr const char* kFeature[] = {"stream sync", "device sync", "malloc"};
  feature(kFeature[k - 6]);
  if (k == 6) return HostCall{r, OpType::stream_sync, stream(), 1};
  if (k == 7) return HostCall{r, OpType::device_sync, "", 1};
  return HostCall{r, OpType::malloc, "", int64_t{1024} << below(17)};
}

// The second host thread: module loads, allocations and syncs on the rank's device while the main
// thread communicates (R8's context lock).
RoundBody Generator::second_thread(core::RankId r) {
  const uint64_t k = below(4);
  if (k == 0) return Launch{r, "aux", "aux", fmt::format("v{}", below(4)), 20 * core::kUs};
  if (k == 1) return HostCall{r, OpType::malloc, "", 1};  // 1 byte: its implicit sync matters, not its size
  if (k == 2) return HostCall{r, OpType::device_sync, "", 1};
  return Sleep{r, static_cast<core::Time>(10 + below(300)) * core::kUs};
}

void Generator::push(RoundBody body, const std::string& label, Thread t) {
  generator::add_round(draft_, Round{std::move(body), opts_.labels ? label : "", "", t});
}

void Generator::add_round(int index) {
  const std::string label = fmt::format("r{}", index);
  const program::CommDecl& c = pick_comm();
  const auto any_second =
      std::any_of(draft_.ranks.begin(), draft_.ranks.end(), [](const RankDraft& d) { return d.has_second; });
  const uint64_t k = below(100);
  if (k < 22) return push(collective(c), label);
  if (k < 31) return push(transfer(c), label);
  if (k < 44) return c.ranks.size() >= 3 && percent(50) ? push(ring(c), label) : push(exchange(c), label);
  if (k < 47) return push(self_exchange(c), label);
  if (k < 52 && !any_second && opts_.graphs_and_usage_errors) return push(graph(c), label);
  const auto r = static_cast<core::RankId>(below(static_cast<uint64_t>(out_.program.num_ranks)));
  if (k >= 90 && draft_.ranks[static_cast<size_t>(r)].has_second) return push(second_thread(r), label, Thread::second);
  push(local(r), label);
}

}  // namespace ppspec::generator::seeded
