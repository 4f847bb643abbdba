// `ppspec from-vllm`: vLLM engine arguments (flags, JSON, flat YAML) as a serving scenario of the same
// shape; every mapping as vLLM reads it, every argument without a counterpart said, bad input refused.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/did_you_mean.h"
#include "core/file_bytes.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
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
  EXPECT_TRUE(said(s, "method = \"ngram\": n-gram lookup in the prompt has no counterpart"));

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
      vllm_config::to_serving(vllm_config::parse_cli({"--kv-cache-memory-bytes", "1000000"}));
  EXPECT_TRUE(said(s, "kv_cache_memory_bytes"));
  EXPECT_TRUE(said(s, "not an engine argument ppspec knows"));
}

// --kv-transfer-config: a modelled connector makes the scenario disaggregated, both instances of
// the command line's shape, without prefix caching; another connector, a role vLLM does not know,
// or data parallelism is refused, naming the argument.
TEST(FromVllm, TheKvTransferConfigDisaggregatesTheScenario) {
  const vllm_config::Serving s = vllm_config::to_serving(vllm_config::parse_cli(
      {"-pp", "2", "--kv-transfer-config", R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})"}));
  EXPECT_TRUE(s.scenario.disaggregated);
  EXPECT_EQ(s.scenario.prefill_pp, 2);
  EXPECT_EQ(s.scenario.prefill_tp, 1);
  EXPECT_FALSE(s.scenario.enable_prefix_caching);
  EXPECT_EQ(s.scenario.num_blocks, 0);  // no preemption with disaggregation
  EXPECT_TRUE(said(s, "own prefix hits beside the pulled blocks are not modelled"));
  const auto refused = [](std::vector<std::string> args, const std::string& why) {
    try {
      (void)vllm_config::to_serving(vllm_config::parse_cli(args));
      ADD_FAILURE() << "accepted: " << why;
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--kv-transfer-config"), std::string::npos) << e.what();
    }
  };
  refused({"--kv-transfer-config", R"({"kv_connector": "x", "kv_role": "kv_both"})"}, "\"x\": not modelled");
  refused({"--kv-transfer-config", R"({"kv_connector": "NixlConnector", "kv_role": "both"})"}, "expected one of");
  refused({"-dp", "2", "--kv-transfer-config", R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})"},
          "several data-parallel replicas");
}

// --attention-backend: TRITON_MLA is the split backend; any other backend the varlen kernel, said.
TEST(FromVllm, TheAttentionBackendPicksTritonMlaOrSaysTheVarlenKernel) {
  const vllm_config::Serving mla = vllm_config::to_serving(vllm_config::parse_cli(
      {"-pp", "2", "--speculative-config", R"({"method": "dflash", "num_speculative_tokens": 3})",
       "--attention-backend", "TRITON_MLA"}));
  EXPECT_TRUE(mla.scenario.triton_mla);
  EXPECT_NE(scenario::to_toml(mla.scenario, "mla", "", {}).find("attention = \"triton_mla\""), std::string::npos);
  const vllm_config::Serving flash =
      vllm_config::to_serving(vllm_config::parse_cli({"--attention-backend", "FLASH_ATTN"}));
  EXPECT_FALSE(flash.scenario.triton_mla);
  bool mapped = false;
  for (const vllm_config::Mapping& m : flash.mapped)
    mapped |=
        m.vllm == "attention_backend = FLASH_ATTN" && m.scenario.find("only TRITON_MLA's split") != std::string::npos;
  EXPECT_TRUE(mapped);
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

// Each mapping as vLLM's own source reads it (vllm/config/speculative.py, vllm/config/vllm.py,
// vllm/utils/argparse_utils.py); each case is the behaviour and its opposite.
TEST(FromVllm, MtpAndEagleOneDraftFromTheLastLayerAndEagleThreeFromThree) {
  for (const std::string method : {"deepseek_mtp", "mtp", "qwen3_next_mtp", "eagle"}) {
    SCOPED_TRACE(method);
    const vllm_config::Serving s = vllm_config::to_serving(vllm_config::parse_cli(
        {"-pp", "8", "--speculative-config", R"({"method": ")" + method + R"(", "num_speculative_tokens": 2})"}));
    EXPECT_TRUE(s.scenario.eagle);
    EXPECT_EQ(s.scenario.taps, (std::vector<int>{7}));  // the last of the 8 layers -pp 8 asks for
  }
  const vllm_config::Serving three = vllm_config::to_serving(
      vllm_config::parse_cli({"--speculative-config", R"({"method": "eagle3", "num_speculative_tokens": 2})"}));
  EXPECT_TRUE(three.scenario.eagle);
  EXPECT_TRUE(three.scenario.taps.empty());  // EAGLE-3's three default taps
}

TEST(FromVllm, AsyncSchedulingIsOnByDefaultWhereVllmTurnsItOnAndRefusedWhereVllmRefusesIt) {
  auto batches = [](const std::vector<std::string>& argv) {
    return vllm_config::to_serving(vllm_config::parse_cli(argv)).scenario.max_concurrent_batches;
  };
  const std::string eagle = R"({"method": "eagle3", "num_speculative_tokens": 3})";
  const std::string ngram = R"({"method": "ngram", "num_speculative_tokens": 3})";
  const std::string unpadded =
      R"({"method": "eagle", "num_speculative_tokens": 3, "disable_padded_drafter_batch": true})";
  EXPECT_EQ(batches({"-pp", "4"}), 5);                                    // no proposer: on
  EXPECT_EQ(batches({"-pp", "4", "--speculative-config", eagle}), 5);     // EAGLE kind: on
  EXPECT_EQ(batches({"-pp", "4", "--speculative-config", ngram}), 0);     // n-gram (CPU): off
  EXPECT_EQ(batches({"-pp", "4", "--speculative-config", unpadded}), 0);  // unpadded drafter batch: off
  EXPECT_EQ(batches({"-pp", "4", "--no-async-scheduling", "--speculative-config", eagle}), 0);
  for (const std::string& refused : {ngram, unpadded}) {
    try {
      vllm_config::to_serving(vllm_config::parse_cli({"--async-scheduling", "--speculative-config", refused}));
      ADD_FAILURE() << "vLLM refuses async scheduling with " << refused;
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("vLLM refuses this at start-up"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'--async-scheduling'"), std::string::npos) << e.what();
    }
  }
}

// vLLM's --scheduling-policy: FCFS unless asked; priority with a stress workload whose requests
// carry priorities and arrive over time (what vLLM #28558 needs); a policy vLLM lacks is refused.
TEST(FromVllm, ThePriorityPolicyIsMappedWithPrioritiesArrivingOverTime) {
  const vllm_config::Serving fcfs = vllm_config::to_serving(vllm_config::parse_cli({"-pp", "2"}));
  EXPECT_EQ(fcfs.scenario.scheduling_policy, engine::SchedulingPolicy::fcfs);
  EXPECT_EQ(fcfs.scenario.priority_levels, 1);
  const vllm_config::Serving priority =
      vllm_config::to_serving(vllm_config::parse_cli({"-pp", "2", "--scheduling-policy", "priority"}));
  EXPECT_EQ(priority.scenario.scheduling_policy, engine::SchedulingPolicy::priority);
  EXPECT_GT(priority.scenario.priority_levels, 1);
  EXPECT_TRUE(priority.scenario.poisson);
  try {
    vllm_config::to_serving(vllm_config::parse_cli({"--scheduling-policy", "lifo"}));
    ADD_FAILURE() << "vLLM has no policy 'lifo'";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("scheduling_policy: expected one of fcfs, priority, got \"lifo\""),
              std::string::npos)
        << e.what();
  }
}

TEST(FromVllm, OneCudaGraphSizeIsAnUpperBoundAndSeveralAreTheList) {
  const vllm_config::Serving one = vllm_config::to_serving(vllm_config::parse_cli({"--cuda-graph-sizes", "64"}));
  EXPECT_EQ(one.scenario.capture_sizes, (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64}));
  const vllm_config::Serving two = vllm_config::to_serving(vllm_config::parse_cli({"--cuda-graph-sizes", "16", "64"}));
  EXPECT_EQ(two.scenario.capture_sizes, (std::vector<int>{16, 64}));
}

TEST(FromVllm, AJsonStringInAYamlConfigIsReadAsVllmReadsItAndFlagsAfterTheConfigWin) {
  const std::string yaml =
      file_in_scratch("vllm_json_string.yaml",
                      "tensor_parallel_size: 2\n"
                      "speculative_config: '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'\n"
                      "compilation_config: '{\"cudagraph_capture_sizes\": [3, 6], \"mode\": 3}'\n");
  const vllm_config::Serving s =
      vllm_config::to_serving(vllm_config::parse_cli({"vllm", "serve", "m", "--config", yaml, "-tp", "4"}));
  EXPECT_EQ(s.scenario.tp, 4);  // the flag after --config wins
  EXPECT_EQ(s.scenario.k, 2);
  EXPECT_TRUE(s.scenario.eagle);
  EXPECT_EQ(s.scenario.capture_sizes, (std::vector<int>{3, 6}));
  EXPECT_TRUE(said(s, "compilation_config.mode = 3: torch.compile's"));
  const std::string not_json = file_in_scratch("vllm_not_json.yaml", "speculative_config: 'method=mtp'\n");
  try {
    vllm_config::to_serving(vllm_config::parse_config_file(not_json));
    ADD_FAILURE() << "a speculative_config that is no JSON";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vllm_not_json.yaml:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(not JSON)"), std::string::npos) << e.what();
  }
}

TEST(FromVllm, EveryNoCounterpartLineSaysWhy) {
  const vllm_config::Serving s = vllm_config::to_serving(vllm_config::parse_cli(
      {"vllm", "serve", "m", "--speculative-config",
       R"({"method": "eagle3", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1, "brand_new_knob": 3})",
       "--compilation-config", R"({"cudagraph_mode": "FULL_AND_PIECEWISE", "another_knob": 1})", "--dtype",
       "bfloat16"}));
  ASSERT_FALSE(s.no_counterpart.empty());
  for (const std::string& n : s.no_counterpart) {
    SCOPED_TRACE(n);
    EXPECT_NE(n.find(": "), std::string::npos);
    EXPECT_EQ(n.find("no counterpart\n"), std::string::npos);
    EXPECT_FALSE(n.ends_with(": no counterpart"));
  }
  EXPECT_TRUE(said(s, "draft_tensor_parallel_size = 1: ppspec's drafter runs on the last stage's TP ranks"));
  EXPECT_TRUE(said(s, "brand_new_knob = 3: not a speculative_config field ppspec models"));
  EXPECT_TRUE(said(s, "cudagraph_mode = \"FULL_AND_PIECEWISE\": ppspec captures whole decode steps"));
}

TEST(FromVllm, LazyModuleLoadingIsTheDefaultAndEagerIsAskedFor) {
  EXPECT_EQ(vllm_config::to_serving(vllm_config::parse_cli({"-pp", "2"})).scenario.module_loading,
            core::ModuleLoading::lazy);
  vllm_config::WorkloadChoice eager;
  eager.module_loading = core::ModuleLoading::eager;
  EXPECT_EQ(vllm_config::to_serving(vllm_config::parse_cli({"-pp", "2"}), eager).scenario.module_loading,
            core::ModuleLoading::eager);
}

TEST(FromVllm, AHybridModelGetsRecurrentLayersAndSglangsLauncherIsNamed) {
  const vllm_config::Serving next = vllm_config::to_serving(
      vllm_config::parse_cli({"vllm", "serve", "Qwen/Qwen3-Next-80B-A3B-Instruct", "-pp", "2"}));
  EXPECT_EQ(next.scenario.recurrent_layers, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(next.scenario.enable_prefix_caching);
  EXPECT_TRUE(said(next, "ppspec caches no prefix of a recurrent layer's state"));
  EXPECT_TRUE(vllm_config::to_serving(vllm_config::parse_cli({"vllm", "serve", "Qwen/Qwen3-32B"}))
                  .scenario.recurrent_layers.empty());
  try {
    vllm_config::parse_cli({"python", "-m", "sglang.launch_server", "--model-path", "m"});
    ADD_FAILURE() << "SGLang's launcher";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("SGLang's launch_server is not supported"), std::string::npos) << e.what();
  }
  EXPECT_EQ(vllm_config::parse_cli({"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "-tp", "2"})
                .values.at("tensor_parallel_size")
                .value,
            2);
}

// The scenario from-vllm writes to `name` for an EAGLE-3 K = 3 deployment with `parallel` flags.
serving::ServingScenario eagle3_stress_scenario(const std::string& name, std::vector<std::string> parallel) {
  const std::string file = scratch_path(name).string();
  std::vector<std::string> argv = {"vllm", "serve", "m"};
  argv.insert(argv.end(), parallel.begin(), parallel.end());
  argv.insert(argv.end(), {"--speculative-config", R"({"method": "eagle3", "num_speculative_tokens": 3})"});
  const Out o = from_vllm("", argv, file);
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  return scenario::parse_serving(core::file_bytes_or_throw(file), file);
}

// The stress workload reaches what the deployment enables: run, the paths say so, and nothing is
// warned of as unexercised.
TEST(FromVllm, TheStressWorkloadReachesTheDeploymentsMechanisms) {
  const serving::ServingScenario scenario = eagle3_stress_scenario("from_vllm_stress.toml", {"-pp", "2"});
  const serving::ServingRun run = serving::run_on_sim(scenario, sim::RunConfig{});
  ASSERT_EQ(run.result.verdict, core::Verdict::pass);
  const serving::PathsReached& p = run.paths;
  EXPECT_GT(p.chunked_prompts, 0);
  EXPECT_GT(p.preemptions, 0);
  EXPECT_GT(p.aborts_in_flight, 0);
  EXPECT_GT(p.stop_token_ends, 0);
  EXPECT_GT(p.greedy_requests, 0);
  EXPECT_GT(p.steps_ahead, 0);
  EXPECT_GT(p.prefix_hit_blocks, 0);
  EXPECT_GT(p.taps_relayed, 0);
  EXPECT_EQ(serving::unexercised(scenario.config, p), std::vector<std::string>{});
}

// With replicas each replica's first step fills the token budget before the KV cache: its last
// prompt chunks (a cache sized by half the running requests alone held less than a budget).
TEST(FromVllm, TheStressWorkloadChunksPromptsOnEveryReplica) {
  const serving::ServingScenario scenario =
      eagle3_stress_scenario("from_vllm_stress_dp2.toml", {"--data-parallel-size", "2"});
  EXPECT_GE(scenario.config.model.num_blocks,
            scenario.config.serving.max_num_batched_tokens / scenario.config.model.block_size);
  const serving::ServingRun run = serving::run_on_sim(scenario, sim::RunConfig{});
  ASSERT_EQ(run.result.verdict, core::Verdict::pass);
  EXPECT_GE(run.paths.chunked_prompts, 2) << "one per replica";
  EXPECT_GT(run.paths.dummy_batches, 0);
}

// A warning for a mechanism the scenario enables and the run never reached; none for one it
// reached, nor for one the scenario does not enable.
TEST(PathsReached, AnEnabledMechanismNeverReachedIsWarnedOfAndNoOtherIs) {
  engine::EngineConfig cfg;
  cfg.model.stop_token = 7;
  cfg.topology.pp = 2;
  cfg.spec.k = 2;
  cfg.serving.max_concurrent_batches = 3;
  serving::PathsReached p;
  p.drafts_verified = 10;
  p.chunked_prompts = 1;
  const std::vector<std::string> w = serving::unexercised(cfg, p);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("no request ended on it"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("async scheduling is on"), std::string::npos) << w[1];
  p.stop_token_ends = 1;
  p.steps_ahead = 3;
  EXPECT_TRUE(serving::unexercised(cfg, p).empty());
  cfg.model.stop_token = -1;
  cfg.serving.max_concurrent_batches = 0;
  EXPECT_TRUE(serving::unexercised(cfg, serving::PathsReached{.chunked_prompts = 1, .drafts_verified = 1}).empty());
  // An MTP drafter taps the last stage's own layer: no tap travels, and none is missed.
  cfg.spec.method = engine::DraftMethod::eagle;
  cfg.spec.taps = {cfg.model.layers - 1};
  EXPECT_TRUE(serving::unexercised(cfg, serving::PathsReached{.chunked_prompts = 1, .drafts_verified = 1}).empty());
  cfg.spec.taps = {0};
  const std::vector<std::string> taps =
      serving::unexercised(cfg, serving::PathsReached{.chunked_prompts = 1, .drafts_verified = 1});
  ASSERT_EQ(taps.size(), 1u);
  EXPECT_NE(taps[0].find("no tap was relayed"), std::string::npos) << taps[0];
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
