// An invariance oracle whose reference run fails by itself reports the reference's own first
// failure (serving/runner.h reference_failure): its verdict, kind, engine step and sites, said to
// be the reference's; a reference that merely did not finish says there was nothing to compare.
#include <gtest/gtest.h>

#include <string>

#include "core/finding_kinds.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"

namespace ppspec::testing {
namespace {

TEST(ReferenceFailure, AReferenceThatFailsIsReportedByItsOwnFirstFailure) {
  // The pp = 1 reference of a pp = 2 scenario, as the PP-invariance oracle builds it, with a
  // padding defect that fails it by itself.
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions/uncleared_padding.toml";
  serving::ServingScenario s = scenario::read_serving(scenario::parse_toml_file(file), file);
  ASSERT_GT(s.config.topology.pp, 1);
  s.config.serving.max_concurrent_batches = s.config.schedules_ahead() ? 2 : 0;
  s.config.topology.pp = 1;
  sim::RunConfig o;
  o.seed = 1;
  const serving::ServingRun reference = serving::simulate(s.config, s.runtime, o);
  ASSERT_EQ(reference.result.verdict, core::Verdict::padding_violation);
  const core::Finding& own = reference.result.findings.front();
  ASSERT_GE(own.engine_step, 0);

  const core::Finding f = serving::reference_failure("pp = 1", core::FindingKind::pp_invariance, 7, reference.result);
  EXPECT_EQ(f.verdict, core::Verdict::padding_violation);
  EXPECT_EQ(f.kind, own.kind);
  EXPECT_EQ(f.engine_step, own.engine_step) << "the reference's step, not none";
  EXPECT_EQ(f.summary, "in the reference run (pp = 1): " + own.summary);
  ASSERT_FALSE(f.sites.empty());
  EXPECT_EQ(f.sites.front().rank, own.sites.front().rank);
  ASSERT_FALSE(f.details.empty());
  EXPECT_NE(f.details.front().find("the engine steps, ranks and streams named here are the reference run's"),
            std::string::npos)
      << f.details.front();
}

TEST(ReferenceFailure, AReferenceThatDidNotFinishWithoutFailingHasNothingToCompare) {
  core::RunResult r;
  r.verdict = core::Verdict::pass;
  const core::Finding f = serving::reference_failure("eager", core::FindingKind::padding_invariance, 7, r);
  EXPECT_EQ(f.verdict, core::Verdict::output_divergence);
  EXPECT_EQ(f.kind, core::FindingKind::padding_invariance);
  EXPECT_EQ(f.engine_step, -1);
  EXPECT_EQ(f.summary, "the reference run (eager) did not complete (verdict pass): nothing to compare against");
}

}  // namespace
}  // namespace ppspec::testing
