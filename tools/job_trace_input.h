// What `show` and `export` read when they are given a job's NCCL profiler plugin traces (a folder of
// them, or one): the job merged into one trace of ppspec's schema, as `ppspec watch` writes it, in a
// temporary file that lives as long as this object. Any other input is read as it is.
#pragma once

#include <string>

namespace ppspec::tools {

class TraceInput {
 public:
  // Throws core::InputError for plugin traces that cannot be read.
  explicit TraceInput(const std::string& input);
  ~TraceInput();
  TraceInput(const TraceInput&) = delete;
  TraceInput& operator=(const TraceInput&) = delete;

  // The trace to read: `input`, or the merged job.
  const std::string& path() const { return path_; }
  bool merged() const { return merged_; }

 private:
  std::string path_;
  bool merged_ = false;
};

}  // namespace ppspec::tools
