// A run's result across the boundary of the process that ran it on GPUs: written by the child, read
// by the parent. Lossless for everything a report, the oracles and the sim = GPU comparison read
// (every finding's fields, the run's figures, every request's record and the monitors' coverage),
// so that a result reads the same in the parent as in the child (tests/gpu_child_test.cc proves the
// round trip on simulated runs of every committed serving scenario kind).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runs/execute.h"
#include "scenario/scenario.h"

namespace ppspec::gpu_jobs {

nlohmann::json encode(const runs::Executed& e);
// Why a run gave no result: bad input for this machine (exit 2), or a failure of the run (exit 3).
nlohmann::json encode_error(const std::string& error, bool bad_input);
// The result of a run of `sc` (the scenario the parent gave the child). Throws std::runtime_error
// naming what is wrong when `j` is no such result (a result of another kind, a finding without a
// verdict or of an unknown kind, a request not in the workload, lists of different lengths).
runs::Executed decode(const nlohmann::json& j, const scenario::Scenario& sc);

}  // namespace ppspec::gpu_jobs
