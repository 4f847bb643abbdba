// Simulator throughput (Google Benchmark; not run in CI).
//   BM_RingPairs/R/sync: R ranks in a ring; every step each rank posts one grouped
//   {send to next, recv from previous} of 64 floats, then synchronises its stream every `sync`
//   steps. Counter `pairs/s`: positional pairings (one send matched with one recv) per second of
//   wall time, on one core.
//   BM_ShortRuns/R: a whole run of R ranks in a ring of 4 steps, start to finish: the cost of making
//   and ending a world and its fibers, which the property tests and fuzzing pay thousands of times.
//   Counter `runs/s`.
//   BM_Serving/scenario/oracles: a serving scenario end to end (scenario 0: pp2 tp2 K5, 64 requests
//   x 128 output tokens; 1: pp2 tp1 K5, 24 requests of up to 64 tokens; 2: scenario 0 on TRITON_MLA;
//   3: scenario 0 with its inputs staged through pinned host buffers); with oracles = 1 also the
//   golden reference and the pp = 1 run of PP invariance; with races = 1 the race detector on (as a
//   serving run has it unless `[runtime] race_detection = false`). Counter `engine_steps/s`: the
//   scenario's engine steps (batches) per second of wall time.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "program/runner.h"
#include "serving/runner.h"

namespace ppspec {
namespace {

program::Program ring(int ranks, int steps, int sync_every) {
  program::Program p;
  p.name = fmt::format("ring{}", ranks);
  p.num_ranks = ranks;
  program::CommDecl world{"world", {}};
  for (int r = 0; r < ranks; ++r) world.ranks.push_back(r);
  p.comms.push_back(world);
  p.config.max_steps = UINT64_MAX;
  p.ranks.resize(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    program::ThreadProgram t;
    t.repeat = steps / sync_every;
    auto op = [&](program::OpType type) {
      program::ProgramOp o;
      o.type = type;
      o.comm = "world";
      o.stream = "main";
      o.dtype = core::Dtype::f32;
      o.count = 64;
      o.label = "ring";
      return o;
    };
    for (int i = 0; i < sync_every; ++i) {
      t.ops.push_back(op(program::OpType::group_start));
      auto send = op(program::OpType::send);
      send.peer = (r + 1) % ranks;
      auto recv = op(program::OpType::recv);
      recv.peer = (r + ranks - 1) % ranks;
      t.ops.push_back(send);
      t.ops.push_back(recv);
      t.ops.push_back(op(program::OpType::group_end));
    }
    t.ops.push_back(op(program::OpType::stream_sync));
    p.ranks[static_cast<size_t>(r)].push_back(t);
  }
  p.expect.verdict = core::Verdict::pass;
  return p;
}

void BM_RingPairs(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int sync_every = static_cast<int>(state.range(1));
  const int steps = 20000;
  const program::Program p = ring(ranks, steps, sync_every);
  uint64_t pairs = 0;
  uint64_t sched = 0;
  for (auto _ : state) {
    sim::RunConfig o;
    o.seed = 1;
    o.record_decisions = false;
    const core::RunResult r = program::run_on_sim(p, o);
    if (r.verdict != core::Verdict::pass) state.SkipWithError("the ring did not pass");
    pairs += r.stats.pairs;
    sched += r.stats.sched_steps;
  }
  state.counters["pairs/s"] = benchmark::Counter(static_cast<double>(pairs), benchmark::Counter::kIsRate);
  state.counters["sched_steps/s"] = benchmark::Counter(static_cast<double>(sched), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingPairs)->Args({2, 1})->Args({8, 1})->Args({2, 16})->Args({8, 16})->Unit(benchmark::kMillisecond);

void BM_ShortRuns(benchmark::State& state) {
  const program::Program p = ring(static_cast<int>(state.range(0)), 4, 1);
  uint64_t runs = 0;
  for (auto _ : state) {
    sim::RunConfig o;
    o.seed = 1;
    o.record_decisions = false;
    if (program::run_on_sim(p, o).verdict != core::Verdict::pass) state.SkipWithError("the ring did not pass");
    ++runs;
  }
  state.counters["runs/s"] = benchmark::Counter(static_cast<double>(runs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ShortRuns)->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_Serving(benchmark::State& state) {
  // 2: the seed PR's shape on TRITON_MLA: its attention split into two paths each step.
  const char* name = state.range(0) == 1 ? "pp2_tp1_k5.toml" : "pp2_tp2_k5.toml";
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/" + name;
  serving::ServingScenario s = scenario::read_serving(scenario::parse_toml_file(file), file);
  if (state.range(0) == 2) s.config.model.attention = engine::AttentionBackend::triton_mla;
  s.config.serving.pin_memory = state.range(0) == 3;
  s.runtime.detect_races = state.range(2) != 0;
  sim::RunConfig o;
  o.record_decisions = false;
  o.oracles = state.range(1) != 0;
  int64_t steps = 0, tokens = 0;
  for (auto _ : state) {
    const serving::ServingRun r = serving::run_on_sim(s, o);
    if (r.result.verdict != core::Verdict::pass) state.SkipWithError("the serving scenario did not pass");
    steps += r.stats.steps;
    tokens += r.stats.output_tokens;
  }
  state.counters["engine_steps/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Serving)
    ->ArgNames({"scenario", "oracles", "races"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 0}, {1, 0}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppspec

BENCHMARK_MAIN();
