// Serving scenarios: a good one loads with every field; bad ones are rejected with file, line and
// the reason (invalid topology, K, capture sizes, workloads that cannot fit).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "scenario/serving_loader.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

const char* kGood = R"(kind = "serving"
name = "good"

[topology]
pp = 2
tp = 2

[model]
layers = 4
lanes = 8

[spec]
k = 5
feedback = "single-payload"

[serving]
capture_sizes = [6, 12, 24]
max_num_seqs = 4
max_num_batched_tokens = 64
chunked_prefill = false

[workload]
num_requests = 8
prompt_min = 4
prompt_max = 16
output_min = 8
output_max = 32
arrival = "poisson"
mean_gap_us = 50
temperature = 0.25
seed = 3

[runtime]
module_loading = "eager"

[expect]
verdict = "pass"
)";

std::string with(const std::string& from, const std::string& to) { return replaced(kGood, from, to); }
// kGood with prefix caching on, and one more replacement.
std::string with_prefix_caching(const std::string& from, const std::string& to) {
  return replaced(replaced(kGood, "chunked_prefill = false", "chunked_prefill = false\nenable_prefix_caching = true"),
                  from, to);
}

TEST(ServingLoader, GoodScenarioLoadsEveryField) {
  const serving::ServingScenario s = scenario::parse_serving(kGood, "good.toml");
  EXPECT_EQ(s.name, "good");
  EXPECT_EQ(s.config.topology.pp, 2);
  EXPECT_EQ(s.config.topology.tp, 2);
  EXPECT_EQ(s.config.spec.k, 5);
  EXPECT_EQ(s.config.spec.feedback, engine::Feedback::single_payload);
  EXPECT_EQ(s.config.serving.capture_sizes, (std::vector<int>{6, 12, 24}));
  EXPECT_FALSE(s.config.serving.chunked_prefill);
  EXPECT_EQ(s.config.workload.arrival, engine::Arrival::poisson);
  EXPECT_DOUBLE_EQ(s.config.workload.temperature, 0.25);
  EXPECT_EQ(s.runtime.module_loading, core::ModuleLoading::eager);
  EXPECT_EQ(s.expect.verdict, core::Verdict::pass);
  EXPECT_TRUE(s.oracles.golden);
  EXPECT_TRUE(s.oracles.pp_invariance);
  EXPECT_FALSE(s.config.serving.enable_prefix_caching);
  EXPECT_EQ(s.config.workload.shared_prefix, 0);
  const serving::ServingScenario p = scenario::parse_serving(
      with_prefix_caching("seed = 3", "seed = 3\nshared_prefix = 8\nprefix_groups = 3"), "p.toml");
  EXPECT_TRUE(p.config.serving.enable_prefix_caching);
  EXPECT_EQ(p.config.workload.shared_prefix, 8);
  EXPECT_EQ(p.config.workload.prefix_groups, 3);
  EXPECT_EQ(s.config.serving.scheduling_policy, engine::SchedulingPolicy::fcfs);
  EXPECT_EQ(s.config.workload.priority_levels, 1);
  const serving::ServingScenario q =
      scenario::parse_serving(replaced(with("seed = 3", "seed = 3\npriority_levels = 3"), "chunked_prefill = false",
                                       "chunked_prefill = false\nscheduling_policy = \"priority\""),
                              "q.toml");
  EXPECT_EQ(q.config.serving.scheduling_policy, engine::SchedulingPolicy::priority);
  EXPECT_EQ(q.config.workload.priority_levels, 3);
  EXPECT_FALSE(s.config.serving.pin_memory);
  EXPECT_TRUE(scenario::parse_serving(with("max_num_seqs = 4", "max_num_seqs = 4\npin_memory = true"), "m.toml")
                  .config.serving.pin_memory);
}

class ServingBadInput : public ::testing::TestWithParam<Bad> {};

TEST_P(ServingBadInput, IsRejectedWithFileLineAndReason) { expect_rejected(GetParam(), scenario::parse_serving); }

INSTANTIATE_TEST_SUITE_P(
    ServingLoader, ServingBadInput,
    ::testing::Values(
        Bad{"pp_zero", with("pp = 2", "pp = 0"), 5, "'pp'"}, Bad{"tp_zero", with("tp = 2", "tp = 0"), 6, "'tp'"},
        Bad{"more_stages_than_layers", with("layers = 4", "layers = 1"), 5,
            "pp = 2 has more stages than the model has layers (1)"},
        Bad{"tp_does_not_divide_lanes", with("lanes = 8", "lanes = 7"), 6,
            "tp = 2 does not divide the model's 7 lanes"},
        Bad{"more_tp_ranks_than_lanes", with("lanes = 8", "lanes = 1"), 6, "does not divide the model's 1 lanes"},
        Bad{"k_out_of_range", with("k = 5", "k = 17"), 13, "'k'"},
        Bad{"k_negative", with("k = 5", "k = -1"), 13, "'k'"},
        Bad{"unknown_feedback", with("\"single-payload\"", "\"two-message\""), 14,
            "'two-message' is not one of: three-message, single-payload"},
        Bad{"capture_unsorted", with("[6, 12, 24]", "[6, 24, 12]"), 17, "must be sorted and unique (12 after 24)"},
        Bad{"capture_not_multiple_of_k_plus_1", with("[6, 12, 24]", "[6, 8, 24]"), 17,
            "capture size 8 is not a multiple of K+1 = 6"},
        Bad{"capture_not_integer", with("[6, 12, 24]", "[6, \"x\"]"), 17, "expected positive integers"},
        Bad{"kv_cache_too_small", with("lanes = 8", "lanes = 8\nnum_blocks = 4"), 11,
            "4 KV blocks cannot hold one request at its longest: 5 blocks of 16 tokens for a 16-token prompt, 32 "
            "output tokens, "
            "the last verification block and the drafter's 5 lookahead slots, + the null block; valid: 6 or more"},
        Bad{"prompt_leaves_no_room", with("lanes = 8", "lanes = 8\nmax_model_len = 22"), 26,
            "prompts of 16 tokens (+6 for a verification block) leave no room below max_model_len 22"},
        Bad{"prompt_never_fits_budget", with("max_num_batched_tokens = 64", "max_num_batched_tokens = 12"), 19,
            "without chunked prefill a 16-token prompt never fits a 12-token budget"},
        Bad{"too_many_batches_in_flight", with("max_num_seqs = 4", "max_num_seqs = 4\nmax_concurrent_batches = 4"), 19,
            "4 batches in flight with pp = 2: valid 2 (one per stage; 0 says the same) or 3 (async scheduling's "
            "lookahead batch, as vLLM allows)"},
        Bad{"too_few_batches_in_flight", with("max_num_seqs = 4", "max_num_seqs = 4\nmax_concurrent_batches = 1"), 19,
            "1 batches in flight with pp = 2: valid 2"},
        Bad{"adaptive_budget_with_k1",
            replaced(with("k = 5", "k = 1\nadaptive_budget = true"), "[6, 12, 24]", "[6, 12]"), 14,
            "an adaptive budget picks 1 to K drafts per step, and K = 1 leaves no choice: valid with k >= 2"},
        Bad{"adaptive_budget_scheduled_ahead",
            replaced(with("k = 5", "k = 5\nadaptive_budget = true"), "max_num_seqs = 4",
                     "max_num_seqs = 4\nmax_concurrent_batches = 3"),
            14,
            "which a step scheduled ahead (max_concurrent_batches = 3) has not: valid with max_concurrent_batches = 2 "
            "(pp)"},
        Bad{"unknown_draft_method", with("k = 5", "k = 5\nmethod = \"medusa\""), 14,
            "'medusa' is not one of: dspark, eagle"},
        Bad{"tap_on_a_layer_that_does_not_exist", with("k = 5", "k = 5\nmethod = \"eagle\"\ntaps = [0, 4]"), 15,
            "tapped layer 4 does not exist: the model has 4 layers, valid 0 to 3"},
        Bad{"tap_listed_twice", with("k = 5", "k = 5\nmethod = \"eagle\"\ntaps = [1, 1]"), 15,
            "layer 1 is listed twice"},
        Bad{"taps_without_eagle", with("k = 5", "k = 5\ntaps = [1]"), 14,
            "taps are the EAGLE drafter's: valid with method = \"eagle\""},
        Bad{"eagle_with_adaptive_budget", with("k = 5", "k = 5\nmethod = \"eagle\"\nadaptive_budget = true"), 15,
            "an adaptive budget is the DSpark drafter's"},
        Bad{"eagle_without_drafts", replaced(with("k = 5", "k = 0\nmethod = \"eagle\""), "[6, 12, 24]", "[6, 12]"), 14,
            "method = \"eagle\" drafts K tokens: valid with k >= 1"},
        Bad{"dp_not_dividing_the_slots", with("tp = 2", "tp = 2\ndp = 3"), 7,
            "dp = 3 does not divide max_num_seqs = 4: each replica serves an equal share of the request slots"},
        Bad{"dp_with_adaptive_budget",
            replaced(with("tp = 2", "tp = 2\ndp = 2"), "k = 5", "k = 5\nadaptive_budget = true"), 15,
            "an adaptive budget with dp = 2: each replica would decide its own"},
        Bad{"dp_out_of_range", with("tp = 2", "tp = 2\ndp = 0"), 7, "[topology] 'dp': 0 is out of range [1, 16]"},
        Bad{"prompt_range_inverted", with("prompt_min = 4", "prompt_min = 20"), 24, "20 exceeds prompt_max 16"},
        Bad{"unknown_key", with("max_num_seqs = 4", "max_num_seq = 4"), 18, "unknown key 'max_num_seq'"},
        Bad{"pin_memory_not_a_boolean", with("max_num_seqs = 4", "max_num_seqs = 4\npin_memory = 1"), 19,
            "'pin_memory': expected true or false"},
        Bad{"unknown_section", with("[runtime]", "[runtimes]"), 33, "unknown key 'runtimes'"},
        Bad{"unknown_arrival", with("\"poisson\"", "\"uniform\""), 28, "'uniform' is not one of: burst, poisson"},
        Bad{"topk_exceeds_experts", with("lanes = 8", "lanes = 8\nexperts = 2\ntopk = 3"), 12,
            "3 exceeds the 2 experts"},
        Bad{"stop_token_outside_vocab", with("lanes = 8", "lanes = 8\nvocab = 64\nstop_token = 64"), 12,
            "64 is not a token of the vocabulary (64)"},
        Bad{"wrong_type", with("num_requests = 8", "num_requests = \"eight\""), 23,
            "expected an integer, found a string"},
        Bad{"hazards_not_strings", with("verdict = \"pass\"\n", "verdict = \"pass\"\nhazards = [3]\n"), 38,
            "[expect] 'hazards': expected hazard kinds as strings"},
        Bad{"delay_unknown_stream",
            with("module_loading = \"eager\"", "module_loading = \"eager\"\ndelay_stream = \"comm\""), 35,
            "'comm' is not a stream of the engine (main, side)"},
        Bad{"delay_without_stream",
            with("module_loading = \"eager\"", "module_loading = \"eager\"\nstream_delay_us = 5"), 35,
            "a delay needs 'delay_stream'"},
        Bad{"acceptance_inverted", with("verdict = \"pass\"\n", "verdict = \"pass\"\nacceptance = [0.5, 0.2]\n"), 38,
            "[expect] 'acceptance': expected [lo, hi] with 0 <= lo <= hi <= 1"},
        Bad{"kind_with_pass", with("verdict = \"pass\"\n", "verdict = \"pass\"\nkind = \"padding\"\n"), 38,
            "a 'pass' has no finding, so no kind"},
        Bad{"kind_of_another_verdict", with("verdict = \"pass\"\n", "verdict = \"stale-draft\"\nkind = \"padding\"\n"),
            38, "'padding' is not a kind of 'stale-draft' (one of: draft-freshness, draft-relay)"},
        Bad{"prefix_cache_blocks_of_zero_tokens", with_prefix_caching("lanes = 8", "lanes = 8\nblock_size = 0"), 11,
            "[model] 'block_size': 0 is out of range [1, 1024]"},
        Bad{"shared_prefix_longer_than_every_prompt", with_prefix_caching("seed = 3", "seed = 3\nshared_prefix = 17"),
            33,
            "[workload] 'shared_prefix': 17 tokens are longer than the longest prompt; valid: 0 to prompt_max = 16"},
        Bad{"prefix_groups_zero", with_prefix_caching("seed = 3", "seed = 3\nshared_prefix = 4\nprefix_groups = 0"), 34,
            "'prefix_groups': 0 is out of range [1, 65536]"},
        Bad{"prefix_caching_not_a_boolean",
            with("chunked_prefill = false", "chunked_prefill = false\nenable_prefix_caching = 1"), 21,
            "'enable_prefix_caching'"},
        Bad{"recurrent_layer_past_the_last", with("lanes = 8", "lanes = 8\nrecurrent_layers = [1, 4]"), 11,
            "[model] 'recurrent_layers': expected layer indices of the model's 4 layers, valid 0 to 3"},
        Bad{"recurrent_layer_negative", with("lanes = 8", "lanes = 8\nrecurrent_layers = [-1]"), 11, "valid 0 to 3"},
        Bad{"recurrent_layer_twice", with("lanes = 8", "lanes = 8\nrecurrent_layers = [2, 0, 2]"), 11,
            "[model] 'recurrent_layers': layer 2 is listed twice"},
        Bad{"recurrent_layers_with_prefix_caching",
            with_prefix_caching("lanes = 8", "lanes = 8\nrecurrent_layers = [1]"), 22,
            "[serving] prefix caching with recurrent layers (1): a cached prefix holds no recurrent state"},
        Bad{"unknown_scheduling_policy",
            with("chunked_prefill = false", "chunked_prefill = false\nscheduling_policy = \"lifo\""), 21,
            "[serving] 'scheduling_policy': 'lifo' is not one of: fcfs, priority"},
        Bad{"priority_levels_under_fcfs", with("seed = 3", "seed = 3\npriority_levels = 2"), 32,
            "[workload] 2 priority levels under FCFS scheduling: vLLM refuses a request's priority"},
        Bad{"priority_levels_zero", with("seed = 3", "seed = 3\npriority_levels = 0"), 32,
            "'priority_levels': 0 is out of range [1, 65536]"},
        Bad{"unknown_expect_key", with("verdict = \"pass\"\n", "verdict = \"pass\"\nhazard = []\n"), 38,
            "unknown key 'hazard'"},
        Bad{"stop_string_of_letters_never_written", with("seed = 3", "seed = 3\nstop_strings = [\"ab\", \"xy\"]"), 32,
            "can never match: the model's text is made of the letters 'abcd' only"},
        Bad{"stop_string_empty", with("seed = 3", "seed = 3\nstop_strings = [\"\"]"), 32,
            "'stop_strings': expected strings of 1 to 16 letters"},
        Bad{"stop_string_not_a_string", with("seed = 3", "seed = 3\nstop_strings = [3]"), 32,
            "'stop_strings': expected strings of 1 to 16 letters"},
        Bad{"stop_string_twice", with("seed = 3", "seed = 3\nstop_strings = [\"ab\", \"ab\"]"), 32, "is listed twice"},
        Bad{"too_many_stop_strings", with("seed = 3", "seed = 3\nstop_strings = [\"a\", \"b\", \"c\", \"d\", \"ab\"]"),
            32, "at most 4 stop strings"}),
    [](const ::testing::TestParamInfo<Bad>& p) { return p.param.name; });

}  // namespace
}  // namespace ppspec::testing
