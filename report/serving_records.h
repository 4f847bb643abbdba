// A serving run's per-request results as JSON, so that a GPU child can hand them to the parent
// (which runs the oracles and the sim = GPU comparison) and a report can show them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/request_record.h"
#include "serving/runner.h"
#include "report/report.h"

namespace ppspec::report {

nlohmann::json requests_json(const std::vector<engine::RequestRecord>& requests);
// The records of `cfg`'s workload with the results in `j` (from requests_json). Throws
// std::runtime_error naming what is wrong when `j` does not describe that workload.
std::vector<engine::RequestRecord> requests_from_json(const engine::EngineConfig& cfg, const nlohmann::json& j);

// What a run achieved, as reports show it.
ServingFigures figures_of(const serving::ServingRun& run);

nlohmann::json serving_stats_json(const engine::ServingStats& s);
engine::ServingStats serving_stats_from_json(const nlohmann::json& j);

}  // namespace ppspec::report
