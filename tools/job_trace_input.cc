#include "tools/job_trace_input.h"

#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>

#include "watch/job_files.h"

namespace ppspec::tools {

TraceInput::TraceInput(const std::string& input) : path_(input) {
  if (!watch::is_plugin_trace_path(input)) return;
  static int made = 0;
  path_ = (std::filesystem::temp_directory_path() / fmt::format("ppspec-job-{}-{}.jsonl", ::getpid(), made++)).string();
  merged_ = true;
  watch::check_plugin_traces(watch::plugin_trace_files({input}), path_);
}

TraceInput::~TraceInput() {
  if (!merged_) return;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace ppspec::tools
