// What the GPU child processes share: how a result reaches the parent (a JSON file written
// atomically), and the serving child's entry point.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <toml++/toml.h>

#include "core/verdict.h"
#include "tools/gpu_backend.h"

namespace ppspec::tools {

void write_result(const std::string& path, const nlohmann::json& j);
nlohmann::json result_json(const core::RunResult& checked, core::Time wall, uint64_t ops);
// A serving scenario on the real backend (tools/gpu_child_serving.cc).
int gpu_child_serving(const GpuChildArgs& args, const toml::table& root, uint64_t hash);

}  // namespace ppspec::tools
