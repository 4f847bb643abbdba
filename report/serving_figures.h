// What a serving run achieved, as reports show it.
#pragma once

#include "report/report.h"
#include "serving/runner.h"

namespace ppspec::report {

ServingFigures figures_of(const serving::ServingRun& run, const engine::EngineConfig& cfg);

}  // namespace ppspec::report
