// `ppspec from-vllm`: vLLM engine arguments (flags, JSON, flat YAML) as a serving scenario of the same
// shape; every mapping as vLLM reads it, every argument without a counterpart said, bad input refused.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/did_you_mean.h"
#include "scenario/serving_loader.h"
#include "tests/command_test.h"
#include "tests/scratch.h"
#include "tools/from_vllm_command.h"
#include "scenario/vllm_config/capture_sizes.h"
#include "scenario/vllm_config/to_serving.h"

namespace ppspec::testing {
namespace {

using vllm_config::EngineArgs;

Out from_vllm(const std::string& config, const std::vector<std::string>& flags, const std::string& out_file,
              bool force = true) {
  tools::FromVllmArgs a;
  a.config = config;
  a.vllm_args = flags;
  a.out = out_file;
  a.force = force;
  std::ostringstream out, err;
  const int code = tools::from_vllm_command(a, out, err);
  return Out{code, out.str(), err.str()};
}

std::string file_in_scratch(const std::string& name, const std::string& text) {
  const std::string path = scratch_path(name).string();
  std::ofstream(path) << text;
  return path;
}

bool said(const vllm_config::Serving& s, const std::string& what) {
  for (const std::string& n : s.no_counterpart)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

TEST(FromVllm, ServeFlagsBecomeTheScenariosTopologySpeculationLimitsAndGraphs) {
  const EngineArgs args = vllm_config::parse_cli(
      {"vllm", "serve", "meta-llama/Llama-3.1-8B", "-pp", "2", "--tensor-parallel-size=2", "--speculative-config",
       R"({"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3})",
       "--max-num-seqs", "16", "--max-num-batched-tokens", "512", "--async-scheduling", "--no-enable-prefix-caching",
       "--gpu-memory-utilization", "0.9"});
  const vllm_config::Serving s = vllm_config::to_serving(args);
  const scenario::ServingCase& c = s.scenario;
  EXPECT_EQ(c.pp, 2);
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.k, 3);
  EXPECT_TRUE(c.eagle);
  EXPECT_TRUE(c.taps.empty());  // EAGLE-3's default taps
  EXPECT_EQ(c.max_num_seqs, 16);
  EXPECT_EQ(c.max_num_batched_tokens, 512);
  EXPECT_EQ(c.max_concurrent_batches, 3);  // pp + 1
  EXPECT_FALSE(c.enable_prefix_caching);
  EXPECT_TRUE(c.chunked_prefill);
  // vLLM's default sizes up to min(16 x 4 x 2, 512) = 128, rounded up to multiples of 4.
  EXPECT_EQ(c.capture_sizes, (std::vector<int>{4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128}));
  EXPECT_TRUE(said(s, "gpu_memory_utilization = 0.9"));
  EXPECT_TRUE(said(s, "model = meta-llama/Llama-3.1-8B"));
  EXPECT_TRUE(said(s, "speculative_config.model"));
}

TEST(FromVllm, AConfigFileIsReadAndFlagsAfterItWin) {
  const std::string yaml =
      file_in_scratch("vllm.yaml",
                      "# serve config\nmodel: Qwen/Qwen3-8B\ntensor_parallel_size: 2\ndata_parallel_size: 2\n"
                      "speculative_config: {\"method\": \"ngram\", \"num_speculative_tokens\": 4}\n"
                      "max_num_seqs: 8   # per engine\nenforce_eager: true\n");
  EngineArgs args = vllm_config::parse_config_file(yaml);
  vllm_config::merge(args, vllm_config::parse_cli({"--tensor-parallel-size", "4"}));
  const vllm_config::Serving s = vllm_config::to_serving(args);
  EXPECT_EQ(s.scenario.tp, 4);
  EXPECT_EQ(s.scenario.dp, 2);
  EXPECT_EQ(s.scenario.max_num_seqs, 16);  // vLLM's is per engine; ppspec's the system's
  EXPECT_TRUE(s.scenario.capture_sizes.empty());
  EXPECT_FALSE(s.scenario.eagle);  // ngram drafts as DSpark, and says so
  EXPECT_TRUE(said(s, "method = \"ngram\": no counterpart"));

  const std::string json = file_in_scratch(
      "vllm.json",
      R"({"pipeline-parallel-size": 3, "compilation_config": {"cudagraph_capture_sizes": [1, 2, 5, 9]}, "num_speculative_tokens": 1})");
  const vllm_config::Serving j = vllm_config::to_serving(vllm_config::parse_config_file(json));
  EXPECT_EQ(j.scenario.pp, 3);
  EXPECT_EQ(j.scenario.k, 1);
  // Multiples of 1 + K = 2, none past the largest given (9) rounded down to one (8): 9 -> 10 goes.
  EXPECT_EQ(j.scenario.capture_sizes, (std::vector<int>{2, 6}));
}

TEST(FromVllm, TheWrittenScenarioReadsBackAndServesCleanly) {
  const std::string file = scratch_path("from_vllm.toml").string();
  const Out o = from_vllm("",
                          {"-pp", "2", "--speculative-config", R"({"method": "dflash", "num_speculative_tokens": 2})",
                           "--max-num-seqs", "4", "--async-scheduling"},
                          file);
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("ppspec run of the scenario (seed 1): pass"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("pipeline_parallel_size = 2 -> [topology] pp = 2"), std::string::npos) << o.out;
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  const serving::ServingScenario s = scenario::parse_serving(text.str(), file);
  EXPECT_EQ(s.config.topology.pp, 2);
  EXPECT_EQ(s.config.spec.k, 2);
  EXPECT_NE(text.str().find("vLLM -> ppspec"), std::string::npos);
}

TEST(FromVllm, BadInputIsExitTwoSayingWhy) {
  const std::string file = scratch_path("from_vllm_bad.toml").string();
  Out o = from_vllm("", {"--pipline-parallel-size", "2"}, file);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("did you mean 'pipeline_parallel_size'?"), std::string::npos) << o.err;
  o = from_vllm("", {"--tensor-parallel-size", "two"}, file);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("tensor_parallel_size: expected an integer in [1, 64], got \"two\""), std::string::npos)
      << o.err;
  o = from_vllm("", {"--speculative-config", R"({"method": "lookahead", "num_speculative_tokens": 2})"}, file);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("'lookahead' is not a vLLM proposer"), std::string::npos) << o.err;
  o = from_vllm(file_in_scratch("nested.yaml", "speculative_config:\n  method: eagle\n"), {}, file);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("nested.yaml:1"), std::string::npos) << o.err;
  o = from_vllm("", {"my-model", "--max-num-seqs", "8", "17"}, file);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("a second model name"), std::string::npos) << o.err;
  o = from_vllm("", {}, file);
  EXPECT_EQ(o.code, 2);
  const std::string there = file_in_scratch("from_vllm_there.toml", "mine\n");
  o = from_vllm("", {"-tp", "2"}, there, false);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("already exists"), std::string::npos) << o.err;
}

TEST(FromVllm, AnArgumentPpspecDoesNotKnowIsSaidAndLeftOut) {
  const vllm_config::Serving s =
      vllm_config::to_serving(vllm_config::parse_cli({"--kv-transfer-config", R"({"kv_connector": "x"})"}));
  EXPECT_TRUE(said(s, "kv_transfer_config"));
  EXPECT_TRUE(said(s, "not an engine argument ppspec knows"));
}

TEST(FromVllm, CaptureSizesAreVllmsDefaultsCappedAndRounded) {
  vllm_config::CaptureSizeInputs in;
  in.max_num_seqs = 4;
  EXPECT_EQ(vllm_config::capture_sizes(in).sizes, (std::vector<int>{1, 2, 4, 8}));  // up to min(4 x 2, 512)
  in.max_num_seqs = 256;
  in.max_num_batched_tokens = 64;
  EXPECT_EQ(vllm_config::capture_sizes(in).sizes.back(), 64);  // capped at the token budget
  in.given = std::vector<int>{3, 7};
  in.k = 2;
  EXPECT_EQ(vllm_config::capture_sizes(in).sizes, (std::vector<int>{3}));  // 7 -> 9 is past 6 (7 rounded down): dropped
}

TEST(DidYouMean, ASlipOfTheKeyboardIsCorrectedAndAnotherWordIsNot) {
  EXPECT_EQ(core::edit_distance("seeds", "sedes"), 1u);  // two neighbours swapped
  EXPECT_EQ(core::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(core::edit_distance("", "abc"), 3u);
  EXPECT_EQ(core::closest_name("sedes", {"seed", "seeds", "strategy"}), std::optional<std::string>("seeds"));
  EXPECT_EQ(core::closest_name("verbose", {"seeds", "strategy"}), std::nullopt);
}

}  // namespace
}  // namespace ppspec::testing
