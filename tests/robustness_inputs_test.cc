// Generated and mutated inputs that broke ppspec (tests/robustness-inputs/README.md), each given the
// answer a correct tool gives: a verdict where the input can be judged, else exit 2 naming the file,
// the line or byte, and what was expected; never a crash, an internal error, a false finding or a
// pass on what was not examined. Runs the ppspec binary, so that main's parsing is the user's.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "core/error.h"
#include "scenario/fuzzer/campaign.h"
#include "scenario/fuzzer/space.h"
#include "tests/ppspec_child.h"
#include "tests/scratch.h"
#include "traces/op_numbers.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

const std::string kInputs = std::string(PPSPEC_SOURCE_DIR) + "/tests/robustness-inputs";

Ran in_dir(const std::string& args) { return run_ppspec(args, "cd '" + kInputs + "' &&"); }

std::string scratch_out(const std::string& name) {
  const fs::path p = scratch_path("robustness_inputs_" + name);
  fs::remove_all(p);
  return p.string();
}

struct Expected {
  std::string args;
  int code;
  std::string says;
};

void expect_all(const std::vector<Expected>& cases) {
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.args);
    const Ran r = in_dir(c.args);
    EXPECT_EQ(r.code, c.code) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
}

// Silent passes: what was not examined, or cannot be, is never `pass`.
TEST(RobustnessInputs, NothingUnexaminedPasses) {
  expect_all({
      // Rank 0 completed collectives its peer never posted: impossible under NCCL.
      {"check plugin_silent_unmatched_completed", 1, "fifo-misalignment (unmatched)"},
      // A rank's trace cut without its trailer: said first, the unmatched collectives after it.
      {"check plugin_silent_truncated_rank", 1, "the trace of rank(s) 1 ends without its trailer"},
      {"watch --dir plugin_silent_truncated_rank --ranks 2 --timeout 3 --out " + scratch_out("watch_truncated"), 1,
       "the trace of rank(s) 1 ends without its trailer"},
      {"check trace_silent_rank_outside_scenario.jsonl", 2,
       "trace_silent_rank_outside_scenario.jsonl:7: rank 7 is not a rank of the 2-rank scenario 'mini_prog'"},
      {"from-vllm -o " + scratch_out("missing.toml") + " no-such-config.yaml", 2,
       "no-such-config.yaml: no such file: before --, from-vllm takes a vLLM config file"},
  });
}

TEST(RobustnessInputs, DeepOrNonUtf8InputIsExitTwoWhereItIs) {
  expect_all({
      {"from-vllm -o " + scratch_out("deep.toml") + " fv_crash_deep_config.json", 2,
       "fv_crash_deep_config.json: a value nested more than 64 deep at hf_overrides[0][0]"},
      {"from-vllm -o " + scratch_out("deep.toml") + " fv_crash_deep_config.yaml", 2,
       "fv_crash_deep_config.yaml:1: a value nested more than 64 deep at hf_overrides[0][0]"},
      {"check fr_crash_deep_input_sizes", 2, "rank_0.json: entries[0].input_sizes[0][0]"},
      {"check fr_pickle_exit3_invalid_utf8_process_group", 2,
       "pickle/rank_0: pickle byte 1058: a string that is not UTF-8 (its byte 0 is 0xff); Python's pickle cannot load "
       "it either"},
      {"export fr_pickle_exit3_export_invalid_utf8_name --perfetto -o " + scratch_out("utf8.json"), 2,
       "pickle byte 1216"},
      {"check fr_pickle_exit3_export_invalid_utf8_name", 2, "pickle byte 1216"},
      {"import fr_pickle_unclear_import_invalid_utf8_thread -o " + scratch_out("utf8.toml"), 2,
       "pickle/rank_0: pickle byte 1079: a string that is not UTF-8"},
      {"from-vllm -o " + scratch_out("utf8.toml") + " -- vllm serve m --foo \"$(printf '\\377')\"", 2,
       "vLLM argument 5: not UTF-8 text: byte 0 is 0xff"},
      {"from-vllm -o " + scratch_out("deep_arg.toml") +
           " -- --foo \"$(printf '%.0s[' $(seq 60000))$(printf '%.0s]' $(seq 60000))\"",
       2, "vLLM argument 1 ('--foo'): a value nested more than 64 deep at foo[0]"},
      // CLI11 would split it level by level, at a cost quadratic in its depth.
      {"check \"$(printf '%.0s[' $(seq 20000))\"", 2, "command-line argument 2 opens 20000 brackets in one another"},
  });
}

TEST(RobustnessInputs, ContradictoryLinesAreExitTwoAtTheLineAndDroppedByTheWatch) {
  const std::string started =
      "plugin_exit3_completed_before_started_while_held/rank0.vm.26634.jsonl:10: operation 1 starts after "
      "its completion: a line repeated or out of order";
  expect_all({
      {"check plugin_exit3_completed_before_started_while_held", 2, started},
      {"show plugin_exit3_completed_before_started_while_held", 2, started},
      {"export plugin_exit3_completed_before_started_while_held --perfetto -o " + scratch_out("held.json"), 2, started},
      {"import plugin_exit3_completed_before_started_while_held -o " + scratch_out("held.toml"), 2, started},
      {"check trace_exit3_rank_beyond_replicas.jsonl", 2,
       "trace_exit3_rank_beyond_replicas.jsonl:3: rank 1000000 is not a rank"},
      {"show trace_exit3_rank_beyond_replicas.jsonl", 2,
       "trace_exit3_rank_beyond_replicas.jsonl:3: rank 1000000 is not a rank"},
      {"check trace_ubsan_request_scheduled_value_max.jsonl", 2,
       "trace_ubsan_request_scheduled_value_max.jsonl:8: 'value': this request_scheduled event's value and its first 3 "
       "integers are "
       "counts"},
      {"check fr_dup_record", 2,
       "rank_0.json: the dump: entry 2 repeats record_id 1 of entry 1: one record written twice"},
      // The live watch goes on: the repeated completion is dropped, counted and said.
      {"watch --dir watch_exit3_duplicate_completion_while_held --ranks 2 --timeout 5 --out " +
           scratch_out("watch_dup"),
       1, "rank0.jsonl:5: operation 139 completes again after its completion"},
      {"watch --dir watch_unclear_plugin_version2 --ranks 2 --timeout 3 --out " + scratch_out("watch_v2"), 2,
       "no NCCL operation could be read: 128 line(s) dropped, nothing to check; the first reason: "},
      {"fuzz --merge fuzz_merge_negative_counts", 2,
       "summary.json: a malformed fuzzing summary: 'cases' is -5: expected a count"},
  });
}

TEST(RobustnessInputs, ServingSettingsTheDocsNameAreTakenAndTheLargestJobIsSaid) {
  expect_all({
      {"run serving_max_concurrent_batches_zero.toml", 0, "verdict pass"},
      {"run serving_exit3_2048_ranks.toml", 2,
       "dp x pp x tp = 1 x 64 x 32 = 2048 ranks: the simulator runs at most 1024"},
  });
  const std::string zero = scratch_out("num_blocks_zero.toml");
  std::ofstream(zero) << "kind = \"serving\"\n[model]\nnum_blocks = 0\n";
  const Ran r = run_ppspec("run " + zero);
  EXPECT_EQ(r.code, 0) << r.output;  // "or 0 for enough", as the message of a too small num_blocks says
}

// from-vllm names the vLLM argument a refusal comes from, never a line of a file it did not write,
// takes vLLM's command line after -- as written, and sizes its model to the pp and tp asked for.
TEST(RobustnessInputs, FromVllmSpeaksOfVllmArguments) {
  expect_all({
      {"from-vllm fv_config.yaml -o " + scratch_out("config_tp.toml") + " -- -tp 2", 0,
       "tensor_parallel_size = 2 -> [topology] tp = 2"},
      {"from-vllm -o " + scratch_out("pp8.toml") + " -- -pp 8", 0,
       "pipeline_parallel_size = 8 -> [model] layers = 8 (a layer per stage)"},
      {"from-vllm -o " + scratch_out("tp16.toml") + " -- -tp 16", 0, "tensor_parallel_size = 16 -> [model] lanes = 16"},
      {"from-vllm -o " + scratch_out("blocks.toml") + " -- --num-gpu-blocks-override 2", 2,
       "vLLM argument 1 ('--num-gpu-blocks-override'): num_gpu_blocks_override = 2 makes [model] num_blocks, which "
       "ppspec cannot run"},
      {"from-vllm -o " + scratch_out("bracket.toml") + " -- vllm serve m --foo '[1,2]'", 0,
       "foo = [1,2]: not an engine argument"},
      {"from-vllm -o " + scratch_out("bracket_seqs.toml") + " -- --max-num-seqs '[8]'", 2,
       "max_num_seqs: expected an integer"},
      {"from-vllm -o " + scratch_out("control.toml") + " -- vllm serve \"$(printf 'm\\001odel')\"", 0,
       "model = m\\x01odel"},
      {"from-vllm -o " + scratch_out("long_model.toml") + " -- $(printf 'x%.0s' $(seq 300))", 0, "wrote "},
      {"from-vllm -o " + scratch_out("long_flags.toml") + " -- --foo $(printf 'x%.0s' $(seq 70000))", 0, "wrote "},
  });
}

#if !defined(__SANITIZE_ADDRESS__)  // the sanitizers reserve more address space than the limit leaves
TEST(RobustnessInputs, RunningOutOfMemoryIsSaid) {
  const Ran r = run_ppspec("run serving_oom_abort.toml", "cd '" + kInputs + "' && ulimit -v 2000000 &&");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("ppspec: out of memory: an allocation failed"), std::string::npos) << r.output;
}
#endif

// 100,000 sends NCCL never built, every line waiting for its peer: each line is one lookup (it was a
// scan of every waiting line: 40 s), so the whole takes well under the bound even under ASan.
TEST(RobustnessInputs, HeldPluginLinesCostLinearTime) {
  const fs::path dir = scratch_out("held");
  fs::create_directories(dir);
  std::ofstream f(dir / "rank0.jsonl");
  f << R"({"ppspec_nccl_profiler":1,"rank":0,"host":"h","pid":1,"clock":"realtime"})" << '\n'
    << R"({"ev":"comm_init","t":1,"comm":"00000000000000aa","name":"w","ranks":2,"comm_rank":0,"interface":5})" << '\n';
  for (int i = 0; i < 100000; ++i)
    f << fmt::format(
             R"({{"ev":"op_posted","t":{},"comm":"00000000000000aa","op":{},"func":"send","dtype":"f32","count":4,"stream":1}})",
             i + 2, i)
      << '\n';
  f << R"({"ppspec_nccl_profiler_end":1,"disabled":false})" << '\n';
  f.close();
  const auto t0 = std::chrono::steady_clock::now();
  const Ran r = run_ppspec("check " + dir.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("waits, and 100000 line(s) with it"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 15.0);
}

// A rank's operation numbers are kept in memory bounded by how far they arrive out of order, not
// by the job's length; a number used twice is told while it can be.
TEST(RobustnessInputs, OperationNumbersAreKeptInBoundedMemory) {
  traces::OpNumbers n;
  for (uint64_t i = 0; i < 1000; ++i) n.use(i);
  EXPECT_TRUE(n.used(0) && n.used(999));
  EXPECT_FALSE(n.used(1000));
  n.use(1002);  // out of order: 1001 comes later
  EXPECT_TRUE(n.used(1002));
  EXPECT_FALSE(n.used(1001));
  n.use(1001);
  EXPECT_TRUE(n.used(1001));
  // A gap that never closes is given up once kAheadMax numbers wait behind it: past it, checked again.
  traces::OpNumbers gap;
  gap.use(0);
  for (uint64_t i = 0; i <= traces::OpNumbers::kAheadMax; ++i) gap.use(2 + i);
  EXPECT_FALSE(gap.used(1)) << "a given-up gap's number is accepted, never refused";
  EXPECT_TRUE(gap.used(2 + traces::OpNumbers::kAheadMax));
  EXPECT_FALSE(gap.used(3 + traces::OpNumbers::kAheadMax));
}

// The fuzzing space draws what the loader accepts, jitter included; --time bounds the shrink.
TEST(RobustnessInputs, TheFuzzingSpaceDrawsJitterAndTheShrinkStopsInTime) {
  const fuzzer::Space s = fuzzer::parse_space("[space]\nkinds = [\"serving\"]\njitter = [0.0, 0.9]\n", "space.toml");
  ASSERT_EQ(s.jitter.size(), 2u);
  fuzzer::FuzzOptions o;
  o.space = s;
  bool drew_high = false;
  for (uint64_t i = 0; i < 64 && !drew_high; ++i) drew_high = fuzzer::draw(o, i).value().serving.jitter == 0.9;
  EXPECT_TRUE(drew_high) << "64 cases never drew jitter 0.9";
  EXPECT_THROW(fuzzer::parse_space("[space]\njitter = [1.5]\n", "space.toml"), core::InputError);
  fuzzer::Found found;
  int runs = 0;
  fuzzer::shrink_while(
      fuzzer::draw(o, 0), [&](const fuzzer::FuzzCase&) { return ++runs > 0; }, 4000, found, [] { return true; });
  EXPECT_EQ(runs, 0) << "out of time before the first candidate: nothing more runs";
  EXPECT_TRUE(found.capped);
}

}  // namespace
}  // namespace ppspec::testing
