// The invariant monitors and the verdict precedence, each both ways: the violation present and
// reported with the right verdict and where, and absent with nothing reported. (The engine-level
// proofs are the regression scenarios and their fault-off twins: tests/CMakeLists.txt, property_tests.)
#include <gtest/gtest.h>

#include <deque>

#include "engine/checkpoint.h"
#include "tests/monitor_fixture.h"
#include "verify/monitors/draft_freshness.h"
#include "verify/monitors/drafter_reference.h"
#include "verify/monitors/embedding_checker.h"
#include "verify/findings.h"
#include "verify/monitors/gate_agreement.h"
#include "verify/monitors/padding_checker.h"
#include "verify/monitors/stage_agreement.h"
#include "verify/oracles/serving_oracles.h"
#include "verify/monitors/warmup_discipline.h"

namespace ppspec::testing {
namespace {

using core::EventKind;
using core::Verdict;

TEST(DraftFreshness, FreshDraftsPassAndStaleOnesNameRequestStageStepAndBothLists) {
  Fixture<verify::DraftFreshness> fx;
  fx.phase(0, core::WarmupPhase::serving);
  fx.send(EventKind::drafts_proposed, 2, 3, 7, {11, 12, 13});
  fx.send(EventKind::drafts_proposed, 3, 3, 7, {11, 12, 13});  // the other TP rank of the last stage
  fx.send(EventKind::inputs_built, 0, 5, 7, {40, 99, 11, 12, 13}, 1);
  EXPECT_TRUE(fx.found.empty());
  fx.send(EventKind::drafts_proposed, 2, 5, 7, {21, 22, 23});
  fx.send(EventKind::inputs_built, 0, 7, 7, {44, 98, 11, 12, 13}, 1);  // still the drafts of step 3
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, Verdict::stale_draft);
  EXPECT_EQ(f.engine_step, 7);
  EXPECT_NE(f.summary.find("rank0 (stage 0) verifies request 7 at engine step 7 with drafts [11, 12, 13]"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("proposed [21, 22, 23] for it at engine step 5"), std::string::npos) << f.summary;
  EXPECT_EQ(f.sites.at(0).rank, 0);
  EXPECT_EQ(f.sites.at(1).rank, 2);
}

TEST(DraftFreshness, AdoptedDraftsMustBeTheProposedOnes) {
  Fixture<verify::DraftFreshness> fx;
  fx.send(EventKind::drafts_proposed, 2, 3, 7, {11, 12, 13});
  fx.send(EventKind::drafts_adopted, 0, 3, 7, {11, 12, 13});
  EXPECT_TRUE(fx.found.empty());
  fx.send(EventKind::drafts_proposed, 2, 5, 7, {21, 22, 23});
  fx.send(EventKind::drafts_adopted, 1, 5, 7, {11, 12, 13});
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, Verdict::stale_draft);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "draft-relay");
  EXPECT_EQ(fx.found[0].summary,
            "rank1 (stage 0) adopts drafts [11, 12, 13] for request 7 from the feedback of engine step 5, but the last "
            "stage proposed [21, 22, 23]");
}

TEST(DraftFreshness, WarmupAndPrefillRowsAreNotChecked) {
  Fixture<verify::DraftFreshness> fx;
  fx.send(EventKind::drafts_proposed, 2, 1, 7, {11, 12, 13});
  fx.send(EventKind::inputs_built, 0, 3, 7, {4, 99, 0, 0, 0}, 1);  // before this rank serves
  fx.phase(0, core::WarmupPhase::serving);
  fx.send(EventKind::inputs_built, 0, 3, 7, {4, 99, 0, 0, 0}, 0);  // a prefill chunk
  EXPECT_TRUE(fx.found.empty());
}

// A decode row the monitor cannot judge (no proposal of its request on record) is counted, never a
// silent pass; a row it judged is not.
TEST(DraftFreshness, RowsWithoutAProposalAreCountedAsSkipped) {
  Fixture<verify::DraftFreshness> fx;
  fx.phase(0, core::WarmupPhase::serving);
  fx.send(EventKind::drafts_proposed, 2, 3, 7, {11, 12, 13});
  fx.send(EventKind::inputs_built, 0, 5, 7, {40, 99, 11, 12, 13}, 1);
  EXPECT_TRUE(fx.monitor->skipped().empty());
  fx.send(EventKind::inputs_built, 0, 5, 8, {40, 99, 11, 12, 13}, 1);  // request 8 proposed nothing
  fx.send(EventKind::drafts_adopted, 1, 9, 7, {11, 12, 13});           // no proposal of step 9
  EXPECT_TRUE(fx.found.empty());
  const auto& skipped = fx.monitor->skipped();
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped.at("draft freshness: decode rows whose request has no proposal on record"), 1u);
  EXPECT_EQ(skipped.at("draft freshness: adoptions with no proposal of their step on record"), 1u);
}

std::vector<int64_t> inert_rows(int n) {
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.insert(v.end(), {0, 0, 1, -1, 0});
  return v;
}

TEST(PaddingChecker, InertPaddingRowsPass) {
  Fixture<verify::PaddingChecker> fx;
  fx.send(EventKind::padding_rows, 0, 4, -1, inert_rows(3), 9, {.padding_kernel = core::PaddingKernel::prepare_inputs});
  fx.send(EventKind::padding_rows, 2, 4, -1, {-1, -1, 0, -1, -1, 0}, 10,
          {.padding_kernel = core::PaddingKernel::topk_softplus_sqrt});
  EXPECT_TRUE(fx.found.empty());
}

TEST(PaddingChecker, StaleOrNeverWrittenRowsAreAViolationNamingTheRow) {
  Fixture<verify::PaddingChecker> fx;
  std::vector<int64_t> rows = inert_rows(3);
  rows[5] = 17;  // row 10: a stale id
  rows[7] = 0;   // is_padding unset
  rows[9] = 1;   // not stored this step
  fx.send(EventKind::padding_rows, 1, 4, -1, rows, 9, {.padding_kernel = core::PaddingKernel::prepare_dflash_inputs});
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, Verdict::padding_violation);
  EXPECT_EQ(fx.found[0].engine_step, 4);
  EXPECT_EQ(
      fx.found[0].summary,
      "rank1 prepare_dflash_inputs: padding row 10 has input id 17 (expected 0), is_padding unset, not stored by the "
      "kernel this step: the graph reads stale or never-written memory");
}

// Each hint follows from the rows' values: which rows are wrong and what they hold.
TEST(PaddingChecker, TheHintSaysWhatTheWrongRowsShow) {
  constexpr auto kNeverWritten = static_cast<int64_t>(0xA5A5A5A5A5A5A5A5ULL);
  struct Case {
    const char* name;
    std::vector<int64_t> rows;  // rows 9..11
    const char* hint;
  };
  const std::vector<Case> cases = {
      {"the last row", {0, 0, 1, -1, 0, 0, 0, 1, -1, 0, 5, 3, 0, 7, 1}, "only the last padding row (row 11) is wrong"},
      {"none stored", {5, 3, 0, 7, 1, 6, 4, 0, 8, 1, 7, 5, 0, 9, 1}, "stored none of the padding rows this step"},
      {"slot 0", {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}, "cleared but for their slot (0)"},
      {"a ramp", {0, 9, 1, -1, 0, 0, 10, 1, -1, 0, 0, 11, 1, -1, 0}, "each padding row's position is its row index"},
      {"a slot never written",
       {0, 0, 1, kNeverWritten, 0, 0, 0, 1, kNeverWritten, 0, 0, 0, 1, kNeverWritten, 0},
       "cleared but for their slot, which no kernel ever wrote: it holds the allocation's poison (0xa5a5a5a5a5a5a5a5), "
       "an index past every KV cache"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture<verify::PaddingChecker> fx;
    fx.send(EventKind::padding_rows, 0, 4, -1, c.rows, 9, {.padding_kernel = core::PaddingKernel::prepare_inputs});
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_NE(fx.found[0].details[0].find(c.hint), std::string::npos) << fx.found[0].details[0];
    // Only a slot that holds a real one can belong to a request's block.
    EXPECT_EQ(fx.found[0].details[0].find("block may own") != std::string::npos, std::string(c.name) == "slot 0")
        << fx.found[0].details[0];
  }
  const std::vector<std::pair<std::vector<int64_t>, const char*>> routers = {
      {{3, 5, 2}, "scored the padding row like a real one"},
      {{3, -1, 0}, "masks the weights of padding rows, not their ids"},
      {{-1, -1, 1}, "masks the ids of padding rows, not their weights"},
  };
  for (const auto& [row, hint] : routers) {
    Fixture<verify::PaddingChecker> fx;
    fx.send(EventKind::padding_rows, 2, 4, -1, row, 10, {.padding_kernel = core::PaddingKernel::topk_softplus_sqrt});
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_NE(fx.found[0].details[0].find(hint), std::string::npos) << fx.found[0].details[0];
  }
}

TEST(PaddingChecker, ARouterThatSelectsExpertsForPaddingIsAViolation) {
  Fixture<verify::PaddingChecker> fx;
  fx.send(EventKind::padding_rows, 2, 4, -1, {-1, -1, 0, 3, 5, 2}, 10,
          {.padding_kernel = core::PaddingKernel::topk_softplus_sqrt});
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, Verdict::padding_violation);
  EXPECT_NE(fx.found[0].summary.find("padding row 11 selects experts [3, 5]"), std::string::npos)
      << fx.found[0].summary;
}

// The probe does not carry topk, so only the checker can see a router row cut short: it is reported,
// never dropped (whole inert rows pass, above).
TEST(PaddingChecker, ARouterRowCutShortIsAViolationNotDropped) {
  Fixture<verify::PaddingChecker> fx;
  fx.send(EventKind::padding_rows, 2, 4, -1, {-1, -1, 0, -1, -1}, 10,
          {.padding_kernel = core::PaddingKernel::topk_softplus_sqrt});
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, Verdict::padding_violation);
  EXPECT_NE(fx.found[0].summary.find("hold 5 fields, not whole rows of topk + 1 = 3"), std::string::npos)
      << fx.found[0].summary;
}

TEST(EmbeddingChecker, TheCheckpointsTablePassesAnyOtherIsAViolation) {
  Fixture<verify::EmbeddingChecker> good;
  good.send(EventKind::table_bound, 2, 2, -1, {512, 0}, 1234, {.table = core::WeightTable::draft_embed_tokens});
  EXPECT_TRUE(good.found.empty());
  Fixture<verify::EmbeddingChecker> bad;
  bad.send(EventKind::table_bound, 2, 2, -1, {512, 512}, 99, {.table = core::WeightTable::draft_embed_tokens});
  ASSERT_EQ(bad.found.size(), 1u);
  EXPECT_EQ(bad.found[0].verdict, Verdict::embedding_violation);
  EXPECT_NE(bad.found[0].summary.find("rank2 (stage 1)"), std::string::npos);
  EXPECT_NE(bad.found[0].summary.find("512 of its 512 entries were never written"), std::string::npos);
}

TEST(GateAgreement, AgreeingRanksPassADisagreementIsAMisalignment) {
  Fixture<verify::GateAgreement> fx;
  for (core::RankId r = 0; r < 4; ++r) fx.send(EventKind::gate, r, 6, -1, {1, 0, 1}, 1);
  EXPECT_TRUE(fx.found.empty());
  fx.send(EventKind::gate, 0, 7, -1, {1, 1}, 1);
  fx.send(EventKind::gate, 2, 7, -1, {}, 0);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "gate-disagreement");
  EXPECT_EQ(fx.found[0].summary,
            "the feedback gate of engine step 7 disagrees: rank0 decided feedback for rows [1, 1], rank2 no feedback");
  EXPECT_NE(fx.found[0].details.front().find("the pp_broadcast FIFO misaligns here"), std::string::npos);
}

// Both ranks post, one row apart: the collectives pair (their shapes follow the batch), so the FIFO
// holds; the row's request is adopted on one rank only, a divergence of the stages' tables.
TEST(GateAgreement, ARowsOnlyDisagreementIsAStageDivergenceNotAMisalignment) {
  Fixture<verify::GateAgreement> fx;
  fx.send(EventKind::gate, 1, 4, -1, {1, 0, 1}, 1);
  fx.send(EventKind::gate, 3, 4, -1, {1, 1, 1}, 1);
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(std::make_pair(f.verdict, std::string(core::to_string(f.kind))),
            std::make_pair(Verdict::stage_divergence, std::string("gate-rows-disagreement")));
  EXPECT_EQ(f.summary,
            "the feedback gate of engine step 4 disagrees: rank1 decided feedback for rows [1, 0, 1], rank3 feedback "
            "for rows [1, 1, 1]");
  EXPECT_NE(f.details.front().find("the pp_broadcast FIFO stays aligned"), std::string::npos);
  fx.send(EventKind::gate, 0, 5, -1, {1}, 1);
  fx.send(EventKind::gate, 2, 5, -1, {}, 0);
  EXPECT_EQ(fx.found.size(), 1u);  // the first disagreement is the finding
}

void op_posted(Fixture<verify::WarmupDiscipline>& fx, core::RankId rank, std::string_view comm) {
  fx.send(EventKind::op_posted, rank, -1, -1, {}, -1, {}, comm);
}

TEST(WarmupDiscipline, TheProtocolOfDesign63Passes) {
  Fixture<verify::WarmupDiscipline> fx;
  fx.phase(0, core::WarmupPhase::feedback_disabled);
  fx.phase(0, core::WarmupPhase::preload_registered_kernels);
  fx.send(EventKind::module_load, 0, -1, -1, {}, 0);
  op_posted(fx, 0, "pp0");
  fx.phase(0, core::WarmupPhase::feedback_enabled);
  op_posted(fx, 0, "pp_broadcast0");
  fx.phase(0, core::WarmupPhase::serving);
  op_posted(fx, 0, "pp_broadcast0");
  EXPECT_TRUE(fx.found.empty());
}

TEST(WarmupDiscipline, FeedbackDuringWarmupAndALoadWhileServingAreHazards) {
  Fixture<verify::WarmupDiscipline> fx;
  fx.phase(1, core::WarmupPhase::preload_registered_kernels);  // never disabled
  op_posted(fx, 1, "pp_broadcast1");
  fx.phase(1, core::WarmupPhase::serving);
  core::Event load;
  load.kind = EventKind::module_load;
  load.rank = 1;
  load.kernel = "post_update";
  load.spec = "deferred";
  load.text = "execute_model step 12";
  load.step = 12;
  verify::deliver(*fx.monitor, load);
  ASSERT_EQ(fx.found.size(), 2u) << "one finding per rule";
  EXPECT_EQ(fx.found[0].verdict, Verdict::hazard);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "feedback-during-warmup");
  EXPECT_EQ(core::to_string(fx.found[1].kind), "module-load-after-warmup");
  EXPECT_EQ(fx.found[1].engine_step, 12);
  EXPECT_NE(fx.found[1].summary.find("rank1 loads kernel module post_update[deferred] while serving"),
            std::string::npos);
}

// Evidence is what a rank posts, not what it announces: announcing "feedback disabled" and posting
// anyway is the hazard; never announcing it and posting nothing is none.
TEST(WarmupDiscipline, TheHazardComesFromAPostedFeedbackOperationNotFromAnAnnouncement) {
  Fixture<verify::WarmupDiscipline> quiet;
  quiet.phase(0, core::WarmupPhase::preload_registered_kernels);  // no "feedback disabled"
  op_posted(quiet, 0, "pp0");
  quiet.phase(0, core::WarmupPhase::feedback_enabled);
  EXPECT_TRUE(quiet.found.empty()) << quiet.found.front().summary;
  Fixture<verify::WarmupDiscipline> posting;
  posting.phase(0, core::WarmupPhase::feedback_disabled);
  posting.phase(0, core::WarmupPhase::preload_registered_kernels);
  op_posted(posting, 0, "pp_broadcast0");
  ASSERT_EQ(posting.found.size(), 1u);
  EXPECT_EQ(core::to_string(posting.found.front().kind), "feedback-during-warmup");
  EXPECT_NE(posting.found.front().summary.find("posts a feedback collective during warmup"), std::string::npos);
}

core::Finding at(Verdict v, core::Time t, std::string_view kind) {
  core::Finding f;
  f.verdict = v;
  f.time = t;
  f.kind = core::parse_finding_kind(kind).value();
  return f;
}

TEST(VerdictPrecedence, TheEarliestFailureDecidesTheRestFollowInTimeOrder) {
  core::RunResult r;
  r.findings.push_back(at(Verdict::fifo_misalignment, 30, "collective-mismatch"));
  r.notes.push_back(at(Verdict::hazard, 5, "module-load-in-flight"));
  verify::settle_verdict(
      r, {at(Verdict::stale_draft, 20, "draft-freshness"), at(Verdict::output_divergence, 40, "golden")}, true);
  EXPECT_EQ(r.verdict, Verdict::stale_draft);
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(core::to_string(r.findings[1].kind), "collective-mismatch");
  EXPECT_EQ(core::to_string(r.findings[2].kind), "golden");
  ASSERT_EQ(r.notes.size(), 1u) << "a hazard is a note when something failed, even when strict";
}

TEST(VerdictPrecedence, HazardsDecideOnlyWhenStrictAndNothingFailed) {
  core::RunResult lax;
  verify::settle_verdict(lax, {at(Verdict::hazard, 5, "module-load-after-warmup")}, false);
  EXPECT_EQ(lax.verdict, Verdict::pass);
  EXPECT_EQ(lax.notes.size(), 1u);
  core::RunResult strict;
  verify::settle_verdict(strict, {at(Verdict::hazard, 5, "module-load-after-warmup")}, true);
  EXPECT_EQ(strict.verdict, Verdict::hazard);
  EXPECT_TRUE(strict.notes.empty());
}

engine::RequestRecord record(int64_t id, std::vector<int64_t> output, std::vector<std::vector<int64_t>> drafts) {
  engine::RequestRecord r;
  r.spec.id = id;
  r.output = std::move(output);
  for (size_t i = 0; i < r.output.size(); ++i) {
    r.output_step.push_back(static_cast<int64_t>(10 + i));
    r.output_time.push_back(static_cast<core::Time>(1000 * (i + 1)));
  }
  r.verified_drafts = std::move(drafts);
  for (size_t i = 0; i < r.verified_drafts.size(); ++i) r.verified_step.push_back(static_cast<int64_t>(10 + i));
  return r;
}

// Preemption moves where a request's verification blocks fall: the max_model_len rule may end it a
// token or two apart in two runs, and a temperature request draws other tokens after it. Without a
// preemption either difference is a divergence.
TEST(PpInvariance, APreemptedRequestIsComparedOverWhatBothRunsDrawAlike) {
  engine::EngineConfig cfg;
  cfg.model.max_model_len = 8;  // prompt 4 + 4 outputs - 1 + K 0 + 1 = 8: at the cap
  for (bool preempted : {false, true}) {
    std::vector<engine::RequestRecord> run{record(0, {5, 6, 7, 8}, {})}, ref{record(0, {5, 6, 7}, {})};
    run[0].spec.prompt = ref[0].spec.prompt = {1, 2, 3, 4};
    run[0].preemptions = preempted ? 1 : 0;
    EXPECT_EQ(verify::pp_invariance_oracle(cfg, run, ref).has_value(), !preempted)
        << "at the cap, preempted " << preempted;
    run[0].spec.spread = ref[0].spec.spread = 8;  // with temperature, preempted after its second token
    run[0].output = {5, 6, 9, 9};
    run[0].first_preempted_at = preempted ? 2 : -1;
    cfg.model.max_model_len = 2048;
    EXPECT_EQ(verify::pp_invariance_oracle(cfg, run, ref).has_value(), !preempted)
        << "temperature, preempted " << preempted;
    cfg.model.max_model_len = 8;
  }
}

TEST(PaddingInvariance, GraphsAndEagerAgreeOrTheFirstDifferenceIsReported) {
  engine::EngineConfig cfg;
  const std::vector<engine::RequestRecord> eager{record(0, {5, 6, 7}, {{1, 2}}), record(1, {8, 9}, {})};
  EXPECT_FALSE(verify::padding_invariance_oracle(cfg, eager, eager));
  const std::vector<engine::RequestRecord> graphs{record(0, {5, 6, 7}, {{1, 3}}), record(1, {8, 4}, {})};
  const auto f = verify::padding_invariance_oracle(cfg, graphs, eager);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->verdict, Verdict::output_divergence);
  EXPECT_EQ(core::to_string(f->kind), "padding-invariance");
  EXPECT_EQ(f->engine_step, 10) << "the draft difference at step 10 precedes the token difference at step 11";
  EXPECT_NE(f->summary.find("request 0 verified different drafts at its decode step 0 than with eager"),
            std::string::npos)
      << f->summary;
}

// The hint follows from what the stale drafts equal: an older proposal, or the admission's zeros.
TEST(DraftFreshness, TheHintSaysWhatTheStaleDraftsAre) {
  for (bool zeros : {false, true}) {
    Fixture<verify::DraftFreshness> fx;
    fx.phase(0, core::WarmupPhase::serving);
    fx.send(EventKind::drafts_proposed, 2, 1, 7, {1, 2, 3});
    fx.send(EventKind::drafts_proposed, 2, 3, 7, {4, 5, 6});
    fx.send(EventKind::inputs_built, 0, 5, 7,
            zeros ? std::vector<int64_t>{9, 8, 0, 0, 0} : std::vector<int64_t>{9, 8, 1, 2, 3}, 1);
    ASSERT_EQ(fx.found.size(), 1u);
    const std::string& hint = fx.found.front().details.back();
    EXPECT_NE(hint.find(zeros ? "the zeros the table row holds from the request's admission"
                              : "they are the drafts proposed at engine step 1, an older step"),
              std::string::npos)
        << hint;
  }
}

// ---- stage agreement: pp 2, tp 2 (ranks 0, 1 are stage 0; 2, 3 the last stage) ----

// Request 7: scheduled at engine step 3 with 10 computed tokens and 4 scheduled; the last stage
// samples [21, 22] with 2 of 3 drafts rejected; at step 5 the engine core has computed 12.
void sampled_then_scheduled(Fixture<verify::StageAgreement>& fx) {
  fx.phase(0, core::WarmupPhase::serving);
  fx.send(EventKind::request_scheduled, -1, 3, 7, {4, 6, 2}, 10);
  fx.send(EventKind::tokens_sampled, 2, 3, 7, {21, 22}, 2);
  fx.send(EventKind::tokens_sampled, 3, 3, 7, {21, 22}, 2);  // the other TP rank: the same, once
  fx.send(EventKind::step_returned, -1, 3, -1, {}, 0);
  fx.send(EventKind::request_scheduled, -1, 5, 7, {4, 6, 2}, 12);
}

// Async scheduling's lookahead batch: step 5 is scheduled before step 3 returned, with step 3's
// three drafts counted as accepted (10 + 4 = 14); the stages embed 14 less the 2 rejected.
TEST(StageAgreement, AStepScheduledAheadIsCheckedAgainstTheCountLessTheRejectedDrafts) {
  for (int64_t embedded : {12, 14}) {
    Fixture<verify::StageAgreement> fx;
    fx.phase(0, core::WarmupPhase::serving);
    fx.send(EventKind::request_scheduled, -1, 3, 7, {4, 6, 2}, 10);
    fx.send(EventKind::request_scheduled, -1, 5, 7, {4, 6, 2}, 14);  // step 3 still in flight
    fx.send(EventKind::tokens_sampled, 2, 3, 7, {21, 22}, 2);
    fx.send(EventKind::step_returned, -1, 3, -1, {}, 0);
    fx.send(EventKind::inputs_built, 0, 5, 7, {embedded, 22, 31, 32, 33}, 1);
    if (embedded == 12) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(core::to_string(fx.found.front().kind), "stage-position");
    EXPECT_NE(fx.found.front().summary.find("at position 14 at engine step 5, but the engine core has computed 12"),
              std::string::npos)
        << fx.found.front().summary;
  }
}

TEST(StageAgreement, AgreeingStagesReportNothing) {
  Fixture<verify::StageAgreement> fx;
  sampled_then_scheduled(fx);
  fx.send(EventKind::feedback_adopted, 0, 3, 7, {2, 2, 21, 22});
  fx.send(EventKind::inputs_built, 0, 5, 7, {12, 22, 31, 32, 33}, 1);
  fx.send(EventKind::inputs_built, 2, 5, 7, {12, 22, 31, 32, 33}, 1);
  EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
}

TEST(StageAgreement, AMissingRejectedCorrectionIsAPositionDivergenceThatSaysSo) {
  Fixture<verify::StageAgreement> fx;
  sampled_then_scheduled(fx);
  fx.send(EventKind::inputs_built, 0, 5, 7, {14, 22, 31, 32, 33}, 1);  // 12 + the 2 rejected drafts
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found.front();
  EXPECT_EQ(f.verdict, Verdict::stage_divergence);
  EXPECT_EQ(core::to_string(f.kind), "stage-position");
  EXPECT_EQ(f.engine_step, 5);
  EXPECT_EQ(f.sites.front().rank, 0);
  EXPECT_NE(f.summary.find("embeds request 7 at position 14 at engine step 5, but the engine core has computed 12"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.details.front().find("rejected 2 drafts and the position is 2 ahead"), std::string::npos)
      << f.details.front();
}

TEST(StageAgreement, ANegativePositionIsReportedEvenWhereNothingElseIsKnown) {
  Fixture<verify::StageAgreement> fx;
  fx.phase(1, core::WarmupPhase::serving);
  fx.send(EventKind::request_scheduled, -1, 4, 9, {8, 8, 3}, 0);
  fx.send(EventKind::inputs_built, 1, 4, 9, {-1, 5, 6}, 0);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(core::to_string(fx.found.front().kind), "stage-position");
}

TEST(StageAgreement, ABonusTokenFromTheWrongColumnIsNamedAsSuch) {
  Fixture<verify::StageAgreement> fx;
  sampled_then_scheduled(fx);
  fx.phase(1, core::WarmupPhase::serving);
  fx.send(EventKind::inputs_built, 1, 5, 7, {12, 21, 31, 32, 33}, 1);
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found.front();
  EXPECT_EQ(core::to_string(f.kind), "stage-token");
  EXPECT_EQ(f.sites.front().rank, 1);
  EXPECT_NE(f.details.front().find("column 0 of 2"), std::string::npos) << f.details.front();
}

TEST(StageAgreement, AdoptingAnotherStepsFeedbackIsAnAdoptionDivergence) {
  Fixture<verify::StageAgreement> fx;
  sampled_then_scheduled(fx);
  fx.send(EventKind::tokens_sampled, 2, 5, 7, {40}, 0);
  fx.send(EventKind::feedback_adopted, 0, 5, 7, {2, 2, 21, 22});  // step 3's, adopted as step 5's
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(core::to_string(fx.found.front().kind), "stage-adoption");
  EXPECT_NE(
      fx.found.front().details.front().find("at engine step 3: the update read the feedback slot of another step"),
      std::string::npos)
      << fx.found.front().details.front();
}

// A feedback row nothing wrote holds the allocation's poison (0xA5 bytes), in its counts (i32) or
// its tokens (i64): said as such, not as feedback that "arrived changed"; a wrong value that is not
// poison keeps its own hint.
TEST(StageAgreement, AFeedbackRowNothingWroteIsNamedAsPoison) {
  const int64_t poison_token = static_cast<int64_t>(0xA5A5A5A5A5A5A5A5ULL);
  const int64_t poison_count = static_cast<int32_t>(0xA5A5A5A5U);
  for (const std::vector<int64_t>& row :
       {std::vector<int64_t>{2, 2, 21, poison_token}, std::vector<int64_t>{poison_count, poison_count, 21, 22},
        std::vector<int64_t>{2, 2, 21, 23}}) {
    Fixture<verify::StageAgreement> fx;
    sampled_then_scheduled(fx);
    fx.send(EventKind::feedback_adopted, 0, 3, 7, row);
    ASSERT_EQ(fx.found.size(), 1u);
    const bool named = fx.found.front().details.front().find("the allocation's poison") != std::string::npos;
    EXPECT_EQ(named, row[3] != 23) << fx.found.front().details.front();
  }
}

TEST(StageAgreement, AdoptingIntoARowAnotherRequestHoldsIsAnAdoptionDivergence) {
  for (bool reused : {false, true}) {
    Fixture<verify::StageAgreement> fx;
    sampled_then_scheduled(fx);                                                 // request 7 in row 2 at steps 3 and 5
    if (reused) fx.send(EventKind::request_scheduled, -1, 4, 8, {6, 6, 2}, 0);  // 7 aborted, row 2 to request 8
    fx.send(EventKind::feedback_adopted, 0, 3, 7, {2, 2, 21, 22}, 2);
    if (!reused) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(core::to_string(fx.found.front().kind), "stage-adoption");
    EXPECT_NE(fx.found.front().summary.find("into table row 2, which request 8 holds since engine step 4"),
              std::string::npos)
        << fx.found.front().summary;
  }
}

// The slot the deferred update read held request 7's feedback, but what it left in request 7's row
// is request 9's bonus token of the same step: the evidence is the row, read back after the kernel.
TEST(StageAgreement, ABonusTokenLandedInTheWrongRowIsNamedFromTheRowItselfEvenWhenTheSlotWasRight) {
  for (int64_t landed : {22, 41}) {
    Fixture<verify::StageAgreement> fx;
    sampled_then_scheduled(fx);  // request 7 sampled [21, 22] at step 3
    fx.send(EventKind::tokens_sampled, 2, 3, 9, {40, 41}, 1);
    fx.send(EventKind::feedback_adopted, 0, 3, 7, {2, 2, 21, 22}, 2);  // what it read: right
    fx.send(EventKind::bonus_adopted, 0, 3, 7, {landed}, 2);           // what it left in row 2
    if (landed == 22) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    const core::Finding& f = fx.found.front();
    EXPECT_EQ(core::to_string(f.kind), "stage-adoption");
    EXPECT_NE(f.summary.find(
                  "leaves token 41 as request 7's bonus token in row 2 after adopting the feedback of engine step 3"),
              std::string::npos)
        << f.summary;
    EXPECT_NE(f.details.front().find("it is request 9's last token at the same step"), std::string::npos)
        << f.details.front();
  }
}

// The update of step 3 (batch [7, 8] in rows 2, 3) scattered through the row mapping of step 4's
// batch ([9] in row 5): request 7's last token is in row 5, its own row kept an old value. The
// cause is read from the whole table after the kernel (table_updated), not from the row alone;
// where no batch's mapping explains the table, the row's own hint stays.
TEST(StageAgreement, AnUpdateScatteredThroughAnotherBatchsRowMappingIsNamedFromTheTable) {
  for (int64_t row5 : {22, 0}) {
    Fixture<verify::StageAgreement> fx;
    fx.phase(0, core::WarmupPhase::serving);
    fx.send(EventKind::batch_scheduled, -1, 3, -1, {7, 8});
    fx.send(EventKind::request_scheduled, -1, 3, 7, {4, 6, 2}, 10);
    fx.send(EventKind::request_scheduled, -1, 3, 8, {4, 6, 3}, 10);
    fx.send(EventKind::tokens_sampled, 2, 3, 7, {21, 22}, 2);
    fx.send(EventKind::tokens_sampled, 2, 3, 8, {31, 32}, 2);
    fx.send(EventKind::step_returned, -1, 3, -1, {}, 0);
    fx.send(EventKind::batch_scheduled, -1, 4, -1, {9});
    fx.send(EventKind::request_scheduled, -1, 4, 9, {4, 6, 5}, 10);
    fx.send(EventKind::inputs_built, 0, 4, -1, {0, 0}, 0);  // rank 0 built step 4: its mapping is [5]
    fx.send(EventKind::table_updated, 0, 3, -1, {0, 0, 20, 32, 0, row5});
    fx.send(EventKind::bonus_adopted, 0, 3, 7, {20}, 2);  // row 2 kept request 7's old token
    ASSERT_EQ(fx.found.size(), 1u);
    const core::Finding& f = fx.found.front();
    EXPECT_EQ(core::to_string(f.kind), "stage-adoption");
    EXPECT_EQ(f.request, 7);
    const bool named = f.details.front().find(
                           "through the row mapping of engine step 4's batch: the tokens of batch position 0 "
                           "(request 7) landed in row 5, request 9's at step 4") != std::string::npos;
    EXPECT_EQ(named, row5 == 22) << f.details.front();
  }
}

TEST(StageAgreement, ASampledRowTheGateLeavesOutIsDroppedFeedback) {
  for (int64_t mask : {1, 0}) {
    Fixture<verify::StageAgreement> fx;
    fx.send(EventKind::batch_scheduled, -1, 3, -1, {7, 8}, 8);
    fx.send(EventKind::gate, 0, 3, -1, {1, mask}, 1);      // stage 0's gate: request 8's row per `mask`
    fx.send(EventKind::tokens_sampled, 2, 3, 8, {40}, 0);  // the last stage sampled request 8
    if (mask == 1) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(fx.found.front().verdict, Verdict::stage_divergence);
    EXPECT_EQ(core::to_string(fx.found.front().kind), "feedback-dropped");
    EXPECT_EQ(fx.found.front().engine_step, 3);
    EXPECT_NE(fx.found.front().summary.find("leaves the request's row out"), std::string::npos)
        << fx.found.front().summary;
  }
}

// Warmup's steps run one at a time and draft nothing: positions are exact there too, synthetic
// requests (ids -2, -3, ...) included, and checked; the bonus token is relayed only once the rank
// serves, so a warmup row's token is not.
TEST(StageAgreement, WarmupPositionsAreCheckedAndWarmupTokensAreNot) {
  Fixture<verify::StageAgreement> quiet;
  quiet.send(EventKind::request_scheduled, -1, 1, -2, {1, 6, 0}, 10);
  quiet.send(EventKind::tokens_sampled, 2, 0, -2, {31}, 0);
  quiet.send(EventKind::inputs_built, 0, 1, -2, {10, 99}, 1);  // right position, a token never relayed
  EXPECT_TRUE(quiet.found.empty());
  Fixture<verify::StageAgreement> off;
  off.send(EventKind::request_scheduled, -1, 1, -2, {1, 6, 0}, 10);
  off.send(EventKind::inputs_built, 0, 1, -2, {9, 99}, 1);  // rank 0 is not serving yet
  ASSERT_EQ(off.found.size(), 1u);
  EXPECT_EQ(core::to_string(off.found[0].kind), "stage-position");
  EXPECT_EQ(off.found[0].engine_step, 1);
  EXPECT_NE(
      off.found[0].summary.find("rank0 (stage 0) embeds request -2 at position 9 at engine step 1, but the engine core "
                                "has computed 10"),
      std::string::npos)
      << off.found[0].summary;
}

// A prefill row embeds the request's prompt at its positions: a chunk read at another offset of the
// prompt is a stage-token divergence that says by how much.
TEST(StageAgreement, APrefillChunkFromAnotherOffsetOfThePromptIsNamed) {
  for (bool shifted : {false, true}) {
    Fixture<verify::StageAgreement> fx;
    fx.send(EventKind::request_scheduled, -1, 1, 7, {3, 6, 0, 40, 41, 42, 43, 44, 45}, 0);
    fx.send(EventKind::inputs_built, 0, 1, 7, {0, 40, 41, 42}, 0);
    fx.send(EventKind::request_scheduled, -1, 3, 7, {3, 6, 0}, 3);
    fx.send(EventKind::inputs_built, 0, 3, 7,
            shifted ? std::vector<int64_t>{3, 42, 43, 44} : std::vector<int64_t>{3, 43, 44, 45}, 0);
    if (!shifted) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(core::to_string(fx.found[0].kind), "stage-token");
    EXPECT_NE(fx.found[0].summary.find(
                  "rank0 (stage 0) embeds token 42 at position 3 of request 7's prefill at engine step 3; "
                  "the prompt has 43"),
              std::string::npos)
        << fx.found[0].summary;
    EXPECT_NE(fx.found[0].details[0].find("an offset of -1"), std::string::npos) << fx.found[0].details[0];
  }
}

// ---- the golden drafter ----

TEST(DrafterReference, ProposalsOfTheReferenceDrafterPassAndOthersNameTheFirstWrongDraft) {
  engine::ModelConfig m;
  const auto ckpt = std::make_shared<const engine::Checkpoint>(engine::make_checkpoint(m));
  for (bool wrong : {false, true}) {
    Fixture<verify::DrafterReference> fx;
    fx.facts.vocab = m.vocab;
    fx.facts.checkpoint = ckpt;
    fx.monitor = std::make_unique<verify::DrafterReference>(
        fx.facts, [&fx](core::Finding f) { fx.found.push_back(std::move(f)); });
    const std::vector<int64_t> prompt{5, 9, 14, 3};
    std::vector<int64_t> scheduled{4, 4, 0};
    scheduled.insert(scheduled.end(), prompt.begin(), prompt.end());
    fx.send(EventKind::request_scheduled, -1, 2, 7, scheduled, 0);
    fx.send(EventKind::tokens_sampled, 2, 2, 7, {17}, 0);
    std::vector<int64_t> context = prompt;
    context.push_back(17);
    std::vector<int64_t> drafts = verify::reference_drafts(*ckpt, m.vocab, fx.facts.k, context);
    ASSERT_EQ(drafts.size(), static_cast<size_t>(fx.facts.k));
    if (wrong) drafts[1] = (drafts[1] + 1) % m.vocab;
    fx.send(EventKind::drafts_proposed, 2, 2, 7, drafts);
    if (!wrong) {
      EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(fx.found.front().verdict, Verdict::output_divergence);
    EXPECT_EQ(core::to_string(fx.found.front().kind), "drafter-oracle");
    EXPECT_EQ(fx.found.front().engine_step, 2);
    EXPECT_NE(fx.found.front().details.front().find("the first 1 drafts agree: the chain went wrong at draft 2"),
              std::string::npos)
        << fx.found.front().details.front();
  }
}

}  // namespace
}  // namespace ppspec::testing
