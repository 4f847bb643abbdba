// What users run, beside the simulator's own benchmarks (ppspec_bench.cc):
//   BM_FiberRoundTrips: two bare Boost.Fiber fibers on their own OS thread (Boost's round-robin
//   scheduler, nothing of ppspec) hand control back and forth. Counter `round_trips/s`: the limit a
//   fiber simulator is measured against; scripts/dev/perf_ratios.sh divides BM_RingPairs's pairs/s by it.
//   BM_FuzzCases: `ppspec fuzz` over scenarios/spaces/pp2.toml without faults (every case clean:
//   engine, monitors, race detection, oracles), 20 cases from seed 1. Counter `cases/s`.
//   BM_CheckTrace: `ppspec check` of a JSON Lines trace written once from pp2_tp2_k5 (about 160 k
//   events). Counter `events/s`.
#include <benchmark/benchmark.h>

#include <boost/fiber/all.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "scenario/fuzzer/campaign.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "traces/jsonl_writer.h"
#include "traces/trace_reader.h"
#include "verify/dumps/trace_check.h"

namespace ppspec {
namespace {

void BM_FiberRoundTrips(benchmark::State& state) {
  constexpr int64_t kRoundTrips = 500000;
  int64_t total = 0;
  for (auto _ : state) {
    // A thread of its own: the benchmark thread's scheduler is ppspec's once a world ran on it.
    std::thread t([] {
      boost::fibers::fiber ping([] {
        for (int64_t i = 0; i < kRoundTrips; ++i) boost::this_fiber::yield();
      });
      boost::fibers::fiber pong([] {
        for (int64_t i = 0; i < kRoundTrips; ++i) boost::this_fiber::yield();
      });
      ping.join();
      pong.join();
    });
    t.join();
    total += kRoundTrips;
  }
  state.counters["round_trips/s"] = benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
}
// Real time: the fibers run on their own thread, which the benchmark thread's CPU time misses.
BENCHMARK(BM_FiberRoundTrips)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_FuzzCases(benchmark::State& state) {
  const std::string space = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/spaces/pp2.toml";
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "ppspec-bench-fuzz";
  uint64_t cases = 0;
  for (auto _ : state) {
    fuzzer::FuzzOptions o;
    o.space = fuzzer::read_space(space);
    o.seed = 1;
    o.cases = 20;
    o.out_dir = out.string();
    std::ostringstream report, progress;
    const fuzzer::FuzzReport r = fuzzer::run_campaign(o, report, progress);
    if (r.failures != 0) state.SkipWithError("a clean case failed");
    cases += r.cases;
  }
  std::filesystem::remove_all(out);
  state.counters["cases/s"] = benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FuzzCases)->Unit(benchmark::kMillisecond);

void BM_CheckTrace(benchmark::State& state) {
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp2_tp2_k5.toml";
  const std::string trace = (std::filesystem::temp_directory_path() / "ppspec-bench-check.jsonl").string();
  {
    serving::ServingScenario s = scenario::read_serving(scenario::parse_toml_file(file), file);
    traces::TraceHeader header;
    header.scenario = s.name;
    header.file = file;
    header.seed = 1;
    header.strategy = "random";
    header.kind = core::ScenarioKind::serving;
    traces::JsonlWriter writer(trace, header);
    sim::RunConfig o;
    o.oracles = false;
    o.sinks.push_back(&writer);
    writer.finish(serving::run_on_sim(s, o).result);
  }
  uint64_t events = 0;
  for (auto _ : state) {
    traces::TraceReader reader(trace, traces::TraceReader::Options{});
    if (verify::check_trace(reader).verdict != core::Verdict::pass)
      state.SkipWithError("the trace did not check clean");
    events += reader.events_read();
  }
  std::remove(trace.c_str());
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CheckTrace)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppspec
