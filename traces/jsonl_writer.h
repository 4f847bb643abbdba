// Writes the event stream as JSON Lines: one header line (format version, scenario, seed, policy),
// one line per event, and a trailer with the verdict and the recorded schedule.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "traces/trace_format.h"

namespace ppspec::traces {

// A finding as the trailer records it.
RecordedFinding recorded(const core::Finding& f);

class JsonlWriter final : public core::EventSink {
 public:
  // Throws std::runtime_error when the file cannot be written.
  JsonlWriter(const std::string& path, const TraceHeader& header);
  void on_event(const core::Event& e) override;
  void finish(const core::RunResult& r);

 private:
  std::ofstream out_;
  std::string path_;
  uint64_t events_ = 0;
};

std::string header_json(const TraceHeader& h);

}  // namespace ppspec::traces
