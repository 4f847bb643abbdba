// A finished job's plugin traces, checked as `ppspec watch` checks them live (`ppspec check DIR`,
// `show`, `export`): every file is read in full, the ranks' lines taken in turn as they would
// have arrived. Strict: a line that is not the plugin's format is exit 2 with its file and line.
#pragma once

#include <string>
#include <vector>

#include "core/verdict.h"

namespace ppspec::watch {

// Whether `path` is a plugin trace, or a folder holding at least one.
bool is_plugin_trace_path(const std::string& path);
// The plugin traces `paths` name (files, or folders of them), sorted.
std::vector<std::string> plugin_trace_files(const std::vector<std::string>& paths);

struct JobCheck {
  core::RunResult result;
  size_t ranks = 0;
  uint64_t posted = 0, completed = 0;
};

// Throws core::InputError for a bad line, or when no operation was recorded at all. With
// `merged_trace`, writes the job's events in ppspec's trace schema there.
JobCheck check_plugin_traces(const std::vector<std::string>& files, const std::string& merged_trace = {});

}  // namespace ppspec::watch
