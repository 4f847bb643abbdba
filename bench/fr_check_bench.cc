// BM_FlightRecorderCheck/R/N: `ppspec check` of Flight Recorder dumps, judged in memory: R ranks of
// N entries each (PyTorch's default ring buffer holds 2,000), per step an all_reduce over every
// rank, a broadcast in each pair of ranks and a p2p send within the pair; one rank posts an extra
// broadcast half-way (one root cause, every later broadcast of its group shifted). Counter
// `entries/s`: dump entries judged per second of wall time, on one core.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "traces/flight_recorder.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec {
namespace {

traces::FrEntry entry(int64_t record, const std::string& group, const std::string& op, int64_t seq, int64_t p2p,
                      int peer, int64_t size) {
  traces::FrEntry e;
  e.record_id = record;
  e.group = group;
  e.op = op;
  e.kind = traces::fr_kind(op);
  e.profiling_name = "nccl:" + op;
  e.collective_seq_id = seq;
  e.p2p_seq_id = p2p;
  e.is_p2p = p2p > 0;
  e.peer = peer;
  e.input_sizes = {{4, size}};
  e.input_dtypes = {"Float"};
  e.output_sizes = e.input_sizes;
  e.output_dtypes = e.input_dtypes;
  e.state = traces::FrState::completed;
  return e;
}

std::vector<traces::FrDump> dumps(int ranks, int entries) {
  std::vector<traces::FrDump> out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    traces::FrDump& d = out[static_cast<size_t>(r)];
    d.rank = r;
    d.file = fmt::format("rank_{}", r);
    d.version = "2.10";
    d.groups["0"] = traces::FrGroup{"0", "world", {}};
    for (int m = 0; m < ranks; ++m) d.groups["0"].ranks.push_back(m);
    const std::string pair = std::to_string(r / 2 + 1);
    d.groups[pair] = traces::FrGroup{pair, "tp", {r / 2 * 2, r / 2 * 2 + 1}};
    int64_t seq_world = 0, seq_pair = 0, p2p = 0;
    for (int step = 0; static_cast<int>(d.entries.size()) < entries; ++step) {
      d.entries.push_back(entry(static_cast<int64_t>(d.entries.size()), "0", "all_reduce", ++seq_world, 0, -1, 64));
      d.entries.push_back(
          entry(static_cast<int64_t>(d.entries.size()), pair, "broadcast", ++seq_pair, 0, -1, step % 3 + 4));
      if (r == 1 && step == entries / 6)
        d.entries.push_back(entry(static_cast<int64_t>(d.entries.size()), pair, "broadcast", ++seq_pair, 0, -1, 9));
      d.entries.push_back(entry(static_cast<int64_t>(d.entries.size()), pair, r % 2 == 0 ? "send" : "recv", seq_pair,
                                ++p2p, r ^ 1, 32));
    }
  }
  return out;
}

void BM_FlightRecorderCheck(benchmark::State& state) {
  const std::vector<traces::FrDump> d = dumps(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t n = 0;
  for (const traces::FrDump& x : d) n += x.entries.size();
  for (auto _ : state) {
    const core::RunResult r = verify::check_flight_recorder(d);
    benchmark::DoNotOptimize(r.findings.size());
    if (r.verdict != core::Verdict::fifo_misalignment) state.SkipWithError("the extra broadcast was not found");
  }
  state.counters["entries/s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlightRecorderCheck)
    ->Args({2, 2000})
    ->Args({8, 2000})
    ->Args({8, 20000})
    ->Args({64, 2000})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppspec
