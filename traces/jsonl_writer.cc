#include "traces/jsonl_writer.h"

#include <fmt/format.h>
#include <stdexcept>

namespace ppspec::traces {

std::string header_json(const TraceHeader& h) {
  std::string s = fmt::format("{{\"ppspec_trace\":{},\"backend\":", kTraceVersion);
  core::append_json_string(s, h.backend);
  s += ",\"scenario\":";
  core::append_json_string(s, h.scenario);
  s += ",\"file\":";
  core::append_json_string(s, h.file);
  s += fmt::format(",\"seed\":{},\"strategy\":", h.seed);
  core::append_json_string(s, h.strategy);
  s += '}';
  return s;
}

JsonlWriter::JsonlWriter(const std::string& path, const TraceHeader& header) : out_(path), path_(path) {
  if (!out_) throw std::runtime_error(fmt::format("cannot write the trace file {}", path));
  out_ << header_json(header) << '\n';
}

void JsonlWriter::on_event(const core::Event& e) { out_ << core::to_json(e) << '\n'; }

void JsonlWriter::finish(const core::RunResult& r) {
  std::string s = fmt::format("{{\"ppspec_trace_end\":{},\"verdict\":\"{}\",\"steps\":{},\"sim_time\":{},\"decisions\":[",
                              kTraceVersion, core::to_string(r.verdict), r.stats.sched_steps, r.stats.sim_time);
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    if (i) s += ',';
    s += fmt::format("{}", r.decisions[i]);
  }
  s += "]}";
  out_ << s << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error(fmt::format("writing the trace file {} failed", path_));
}

}  // namespace ppspec::traces
