// The faults' reachability (engine/fault_reach.h) held to runs: every fault's regression scenario
// reaches its fault, and for every fault a deployment the predicate calls unreachable, made from
// that scenario by changing deployment knobs only, runs without catching it (with the mechanism the
// fault lives in exercised where the deployment has it). A "cannot be reached" that a run
// contradicts fails here. The subtle corners the predicate calls reachable are caught by a run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/assert.h"
#include "engine/fault_reach.h"
#include "runs/execute.h"
#include "serving/paths_reached.h"
#include "scenario/serving_loader.h"

namespace ppspec::testing {
namespace {

const std::string kRegressions = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions/";

serving::ServingScenario regression(std::string_view fault) {
  const std::string path = kRegressions + std::string(fault) + ".toml";
  return scenario::read_serving(scenario::parse_toml_file(path), path);
}

std::string unreachable(const serving::ServingScenario& s, std::string_view fault) {
  return engine::fault_unreachable(s.config, s.runtime.module_loading, fault);
}

// One deployment the predicate calls unreachable for `fault`: the regression scenario changed by
// `change`: deployment knobs only, its workload kept.
struct Unreachable {
  std::string_view fault;
  std::string_view what;
  void (*change)(serving::ServingScenario&);
  int64_t serving::PathsReached::*exercised = nullptr;  // a path the run must reach, if any
};

const std::vector<Unreachable> kUnreachable = {
    {"stale_drafts", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::drafts_verified},
    {"double_post_drafts", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::drafts_verified},
    {"lazy_post_update", "eager module loading",
     [](serving::ServingScenario& s) { s.runtime.module_loading = core::ModuleLoading::eager; }},
    {"warmup_feedback", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; }},
    {"narrow_sampled_width", "the single-payload feedback",
     [](serving::ServingScenario& s) { s.config.spec.feedback = engine::Feedback::single_payload; },
     &serving::PathsReached::drafts_verified},
    {"uncleared_padding", "no CUDA graphs",
     [](serving::ServingScenario& s) { s.config.serving.capture_sizes.clear(); }},
    {"uncleared_padding", "K = 0 with capture size 1",
     [](serving::ServingScenario& s) {
       s.config.spec.k = 0;
       s.config.serving.capture_sizes = {1};
     }},
    {"router_ignores_padding", "no CUDA graphs",
     [](serving::ServingScenario& s) { s.config.serving.capture_sizes.clear(); },
     &serving::PathsReached::drafts_verified},
    {"alias_target_embed", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::drafts_verified},
    {"unordered_draft_gather", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; }},
    {"cap_before_stop", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; },
     &serving::PathsReached::stop_token_ends},
    {"preempt_keeps_spec_tokens", "FCFS",
     [](serving::ServingScenario& s) {
       s.config.serving.scheduling_policy = engine::SchedulingPolicy::fcfs;
       s.config.workload.priority_levels = 1;
     },
     &serving::PathsReached::preemptions},
    {"preempt_keeps_spec_tokens", "a burst",
     [](serving::ServingScenario& s) { s.config.workload.arrival = engine::Arrival::burst; },
     &serving::PathsReached::preemptions},
    {"preempt_keeps_spec_tokens", "one priority level",
     [](serving::ServingScenario& s) { s.config.workload.priority_levels = 1; }, &serving::PathsReached::preemptions},
    {"preempt_keeps_spec_tokens", "one request slot",
     [](serving::ServingScenario& s) { s.config.serving.max_num_seqs = 1; }},
    {"late_output_after_preempt", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::preemptions},
    {"no_draft_lookahead_slots", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; }},
    {"abort_scan_current_batch", "max_concurrent_batches = pp + 1",
     [](serving::ServingScenario& s) { s.config.serving.max_concurrent_batches = s.config.topology.pp + 1; },
     &serving::PathsReached::aborts_in_flight},
    {"abort_scan_current_batch", "pp = 2", [](serving::ServingScenario& s) { s.config.topology.pp = 2; },
     &serving::PathsReached::aborts_in_flight},
    {"lookahead_past_ring", "max_concurrent_batches = pp",
     [](serving::ServingScenario& s) { s.config.serving.max_concurrent_batches = s.config.topology.pp; }},
    {"feedback_for_nonfinal_chunks", "no chunked prefill (and a budget for the longest prompt)",
     [](serving::ServingScenario& s) {
       s.config.serving.chunked_prefill = false;
       s.config.serving.max_num_batched_tokens = s.config.workload.prompt_max;
     }},
    {"feedback_for_nonfinal_chunks", "a token budget of max_model_len - 1",
     [](serving::ServingScenario& s) {
       s.config.model.max_model_len = 256;
       s.config.serving.max_num_batched_tokens = 255;
     }},
    {"full_prefix_hit", "no prefix caching",
     [](serving::ServingScenario& s) { s.config.serving.enable_prefix_caching = false; }},
    {"local_adaptive_budget", "tp = 1", [](serving::ServingScenario& s) { s.config.topology.tp = 1; },
     &serving::PathsReached::drafts_verified},
    {"rollback_last_stage_only", "the recurrent layer on the last stage",
     [](serving::ServingScenario& s) { s.config.model.recurrent_layers = {s.config.model.layers - 1}; },
     &serving::PathsReached::recurrent_rollbacks},
    {"rollback_last_stage_only", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; }},
    {"pinned_read_without_sync", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::drafts_verified},
    {"untagged_aux_relay", "no tap on stage pp - 2",
     [](serving::ServingScenario& s) {
       s.config.spec.taps = {0, 2};
     },
     &serving::PathsReached::taps_relayed},
    {"dummy_run_one_forward", "the DSpark drafter",
     [](serving::ServingScenario& s) { s.config.spec.method = engine::DraftMethod::dspark; },
     &serving::PathsReached::dummy_batches},
    {"dummy_run_one_forward", "EAGLE with K = 1", [](serving::ServingScenario& s) { s.config.spec.k = 1; },
     &serving::PathsReached::dummy_batches},
    {"dummy_run_skips_drafter", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; },
     &serving::PathsReached::dummy_batches},
    {"prefill_exports_lookahead", "K = 0",
     [](serving::ServingScenario& s) {
       s.config.spec.k = 0;
       s.config.spec.method = engine::DraftMethod::dspark;
       s.config.serving.capture_sizes = {4, 8, 16, 32};
     },
     &serving::PathsReached::kv_pulls},
    {"stage_caches_paired_whole", "prefill_pp = pp = 1",
     [](serving::ServingScenario& s) { s.config.disagg.prefill.pp = s.config.topology.pp; },
     &serving::PathsReached::kv_pulls},
    {"prefill_frees_before_read", "no disaggregation", [](serving::ServingScenario& s) { s.config.disagg = {}; },
     nullptr},
    {"kv_ready_one_stage", "decode pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::kv_pulls},
    {"connect_all_stages", "prefill_pp = pp = 1",
     [](serving::ServingScenario& s) {
       s.config.topology.pp = 1;
       s.config.disagg.prefill.pp = 1;
     },
     &serving::PathsReached::kv_pulls},
    {"abort_frees_loading_blocks", "aborts after output tokens",
     [](serving::ServingScenario& s) { s.config.workload.abort_while_loading = false; },
     &serving::PathsReached::aborts},
    {"draft_shares_target_kv_group", "varlen attention",
     [](serving::ServingScenario& s) { s.config.model.attention = engine::AttentionBackend::varlen; }, nullptr},
    {"draft_shares_target_kv_group", "the EAGLE drafter",
     [](serving::ServingScenario& s) { s.config.spec.method = engine::DraftMethod::eagle; },
     &serving::PathsReached::mla_decode_requests},
    {"draft_shares_target_kv_group", "K = 0",
     [](serving::ServingScenario& s) {
       s.config.spec.k = 0;
       s.config.serving.capture_sizes = {1, 2, 4, 8};
     },
     &serving::PathsReached::mla_decode_requests},
    {"rank_local_sampling", "greedy sampling", [](serving::ServingScenario& s) { s.config.workload.temperature = 0; },
     &serving::PathsReached::drafts_verified},
    {"rank_local_sampling", "tp = 1", [](serving::ServingScenario& s) { s.config.topology.tp = 1; },
     &serving::PathsReached::drafts_verified},
    {"tap_local_layer_index", "taps on the first stage only",
     [](serving::ServingScenario& s) {
       s.config.spec.taps = {0, 1};
     },
     &serving::PathsReached::taps_relayed},
    {"tap_local_layer_index", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; },
     &serving::PathsReached::drafts_verified},
    {"partial_prefill_stays_in_flight", "no chunked prefill",
     [](serving::ServingScenario& s) {
       s.config.serving.chunked_prefill = false;
       s.config.serving.max_num_batched_tokens = 128;
     },
     nullptr},
    {"stop_string_keeps_tokens", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; },
     &serving::PathsReached::stop_string_ends},
    {"stop_string_first_listed", "one stop string",
     [](serving::ServingScenario& s) { s.config.workload.stop_strings.resize(1); },
     &serving::PathsReached::stop_string_ends},
    {"stop_string_tail_window", "K = 0", [](serving::ServingScenario& s) { s.config.spec.k = 0; },
     &serving::PathsReached::stop_string_ends},
    {"input_prep_without_sync", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; }},
    {"input_prep_without_sync", "pageable inputs",
     [](serving::ServingScenario& s) { s.config.serving.pin_memory = false; }},
    {"input_prep_sync_after_states", "pp = 1", [](serving::ServingScenario& s) { s.config.topology.pp = 1; }},
    {"input_prep_sync_after_states", "pageable inputs",
     [](serving::ServingScenario& s) { s.config.serving.pin_memory = false; }},
};

std::string findings_of(const serving::ServingRun& run) {
  std::string out;
  for (const core::Finding& f : run.result.findings)
    out += fmt::format("\n  {}: {}", core::to_string(f.verdict), f.summary);
  return out;
}

// The scenario at every seed of its [explore] range, as `ppspec run` runs it (the regression catches
// its fault at each of them): each run must pass. Returns the paths the runs reached, summed.
serving::PathsReached runs_clean(const serving::ServingScenario& s, std::string_view why) {
  serving::PathsReached sum;
  for (uint64_t seed = s.seed; seed < s.seed + s.seeds; ++seed) {
    runs::RunChoices choices;
    choices.seed = seed;
    const serving::ServingRun run = runs::execute(s, choices);
    EXPECT_EQ(run.result.verdict, core::Verdict::pass)
        << "seed " << seed << ": called unreachable (" << why << "), caught:" << findings_of(run);
    for (const serving::PathField& f : serving::path_fields()) sum.*f.field += run.paths.*f.field;
  }
  return sum;
}

TEST(FaultReach, EveryRegressionScenarioReachesItsFault) {
  for (const engine::FaultSwitch& f : engine::kFaultSwitches) {
    const serving::ServingScenario s = regression(f.name);
    EXPECT_TRUE(s.config.faults.*f.field) << f.name;
    EXPECT_EQ(unreachable(s, f.name), "") << f.name;
  }
}

TEST(FaultReach, EveryFaultHasAnUnreachableDeploymentThatRunsClean) {
  std::set<std::string_view> covered;
  for (const Unreachable& u : kUnreachable) {
    SCOPED_TRACE(fmt::format("{}, {}", u.fault, u.what));
    covered.insert(u.fault);
    serving::ServingScenario s = regression(u.fault);
    u.change(s);
    const std::string why = unreachable(s, u.fault);
    EXPECT_NE(why, "");
    const serving::PathsReached reached = runs_clean(s, why);
    if (u.exercised != nullptr) {
      EXPECT_GT(reached.*u.exercised, 0) << "no run exercised the fault's mechanism";
    }
  }
  for (const engine::FaultSwitch& f : engine::kFaultSwitches) EXPECT_TRUE(covered.count(f.name)) << f.name;
}

// The corners the predicate calls reachable where a guess would not: each caught by a run.
TEST(FaultReach, TheSubtleReachableCornersAreCaught) {
  struct Corner {
    std::string_view fault;
    void (*change)(serving::ServingScenario&);
  };
  const Corner corners[] = {
      // A tap on stage pp - 2 alone, with none on an earlier stage.
      {"untagged_aux_relay", [](serving::ServingScenario& s) { s.config.spec.taps = {1}; }},
      // At pp = 1, async scheduling's lookahead batch is a batch in flight when a victim is preempted.
      {"late_output_after_preempt",
       [](serving::ServingScenario& s) {
         s.config.topology.pp = 1;
         s.config.serving.max_concurrent_batches = 2;
       }},
      // At pp = 1, without chunked prefill: a request of the higher priority that arrived later
      // crosses a block boundary after the lower priority's decode row was scheduled.
      {"preempt_keeps_spec_tokens",
       [](serving::ServingScenario& s) {
         s.config.topology.pp = 1;
         s.config.serving.max_concurrent_batches = 0;
         s.config.serving.chunked_prefill = false;
         s.config.serving.max_num_batched_tokens = 42;
         s.config.serving.warmup_steps = 2;
         s.config.model.max_model_len = 2048;
         s.config.model.num_blocks = 11;
         s.config.workload.prompt_min = s.config.workload.prompt_max = 13;
         s.config.workload.output_min = 20, s.config.workload.output_max = 29;
         s.config.workload.mean_gap_us = 331;
         s.config.workload.temperature = 0.8;
         s.config.workload.seed = 26;
       }},
  };
  for (const Corner& c : corners) {
    SCOPED_TRACE(c.fault);
    serving::ServingScenario s = regression(c.fault);
    c.change(s);
    EXPECT_EQ(unreachable(s, c.fault), "");
    EXPECT_NE(runs::execute(s, runs::RunChoices{}).result.verdict, core::Verdict::pass);
  }
}

// The regression's shape over workload seeds, under FCFS, under the priority policy with a burst,
// and with arrivals over time of one priority level: requests are preempted, but the running
// requests stay in the victim's order, no preemption takes a row out of its step, and the fault
// cannot bite. With two levels arriving over time the same shape does take rows out.
TEST(FaultReach, PreemptKeepsSpecTokensNeedsPrioritiesArrivingOverTime) {
  serving::PathsReached sum;
  for (int variant = 0; variant < 3; ++variant) {
    serving::ServingScenario s = regression("preempt_keeps_spec_tokens");
    if (variant == 0) s.config.serving.scheduling_policy = engine::SchedulingPolicy::fcfs;
    if (variant != 1) s.config.workload.priority_levels = 1;
    if (variant == 1) s.config.workload.arrival = engine::Arrival::burst;
    ASSERT_NE(unreachable(s, "preempt_keeps_spec_tokens"), "") << variant;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      s.config.workload.seed = seed;
      const serving::PathsReached reached = runs_clean(s, unreachable(s, "preempt_keeps_spec_tokens"));
      for (const serving::PathField& f : serving::path_fields()) sum.*f.field += reached.*f.field;
    }
  }
  EXPECT_GT(sum.preemptions, 0);
  EXPECT_EQ(sum.preempted_in_step, 0);
  serving::ServingScenario off = regression("preempt_keeps_spec_tokens");
  off.config.faults.preempt_keeps_spec_tokens = false;
  EXPECT_GT(runs_clean(off, "the fault switched off").preempted_in_step, 0);
}

// What a stress workload left uncaught on two deployments: at dp 2, pp 1, tp 1, EAGLE K = 3, with
// the lookahead batch and lazy loading, every fault but late_output_after_preempt has no path; an
// EAGLE-3 drafter's default taps (layers 0, N/2, N-1) miss stage pp - 2 at pp 8 over 8 layers and
// hit it at pp 4 over 4.
TEST(FaultReach, TheStressDeploymentsDataPoints) {
  engine::EngineConfig c;
  c.topology = {2, 1, 1};
  c.spec.k = 3;
  c.spec.method = engine::DraftMethod::eagle;
  c.serving.max_concurrent_batches = 2;
  for (std::string_view fault : {"stale_drafts", "double_post_drafts", "lazy_post_update", "warmup_feedback",
                                 "narrow_sampled_width", "alias_target_embed", "pinned_read_without_sync",
                                 "abort_scan_current_batch", "lookahead_past_ring", "preempt_keeps_spec_tokens"})
    EXPECT_NE(engine::fault_unreachable(c, core::ModuleLoading::lazy, fault), "") << fault;
  EXPECT_EQ(engine::fault_unreachable(c, core::ModuleLoading::lazy, "late_output_after_preempt"), "");

  engine::EngineConfig deep;
  deep.topology = {1, 8, 8};
  deep.model.layers = 8;
  deep.model.lanes = 64;
  deep.spec.k = 3;
  deep.spec.method = engine::DraftMethod::eagle;
  EXPECT_NE(engine::fault_unreachable(deep, core::ModuleLoading::lazy, "untagged_aux_relay"), "");
  deep.topology.pp = 4;
  deep.model.layers = 4;
  EXPECT_EQ(engine::fault_unreachable(deep, core::ModuleLoading::lazy, "untagged_aux_relay"), "");
}

TEST(FaultReach, AnUnknownFaultIsAnInternalError) {
  EXPECT_THROW(engine::fault_unreachable(engine::EngineConfig{}, core::ModuleLoading::eager, "no_such_fault"),
               core::InternalError);
}

}  // namespace
}  // namespace ppspec::testing
