// What a serving run achieved, as reports show it.
#pragma once

#include "report/report.h"
#include "serving/runner.h"
#include "serving/scenario.h"

namespace ppspec::report {

// The run's figures, its paths reached, and the warnings its scenario earns: mechanisms it enables
// that the run never exercised, and faults it switches on that its deployment cannot reach.
ServingFigures figures_of(const serving::ServingRun& run, const serving::ServingScenario& s);

}  // namespace ppspec::report
