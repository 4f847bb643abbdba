#include "traces/jsonl_writer.h"

#include <fmt/format.h>
#include <stdexcept>

namespace ppspec::traces {

std::string header_json(const TraceHeader& h) {
  std::string s = fmt::format("{{\"ppspec_trace\":{},\"backend\":", kTraceVersion);
  core::append_json_string(s, to_string(h.backend));
  s += ",\"scenario\":";
  core::append_json_string(s, h.scenario);
  s += ",\"file\":";
  core::append_json_string(s, h.file);
  s += fmt::format(",\"seed\":{},\"strategy\":", h.seed);
  core::append_json_string(s, h.strategy);
  if (h.kind) {
    s += ",\"kind\":";
    core::append_json_string(s, core::to_string(*h.kind));
  }
  if (h.scenario_hash) s += fmt::format(",\"scenario_hash\":\"{}\"", hash_hex(*h.scenario_hash));
  if (h.content_hash) s += fmt::format(",\"content_hash\":\"{}\"", hash_hex(*h.content_hash));
  if (!h.scenario_text.empty()) {
    s += ",\"scenario_text\":";
    core::append_json_string(s, h.scenario_text);
  }
  s += '}';
  return s;
}

RecordedFinding recorded(const core::Finding& f) {
  RecordedFinding r{f.verdict, f.kind, f.summary, {}};
  for (const core::Site& site : f.sites)
    r.sites.push_back(fmt::format("rank{} {}{}: {}{}", site.rank, site.actor,
                                  site.comm.empty() ? "" : fmt::format(" on '{}' #{}", site.comm, site.cseq), site.what,
                                  site.origin.empty() ? "" : fmt::format(" [{}]", site.origin)));
  return r;
}

std::string hash_hex(uint64_t h) { return fmt::format("{:016x}", h); }

std::optional<uint64_t> parse_hash_hex(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t h = 0;
  for (char c : s) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    h = h * 16 + static_cast<uint64_t>(digit);
  }
  return h;
}

JsonlWriter::JsonlWriter(const std::string& path, const TraceHeader& header) : out_(path), path_(path) {
  if (!out_) throw std::runtime_error(fmt::format("cannot write the trace file {}", path));
  out_ << header_json(header) << '\n';
}

void JsonlWriter::on_event(const core::Event& e) {
  out_ << core::to_json(e) << '\n';
  ++events_;
}

void JsonlWriter::finish(const core::RunResult& r) {
  // The event count lets a reader tell a complete trace from one that lost lines.
  std::string s = fmt::format(
      "{{\"ppspec_trace_end\":{},\"verdict\":\"{}\",\"steps\":{},\"sim_time\":{},\"events\":{},\"decisions\":[",
      kTraceVersion, core::to_string(r.verdict), r.stats.sched_steps, r.stats.sim_time, events_);
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    if (i) s += ',';
    s += fmt::format("{}", r.decisions[i]);
  }
  s += "],\"findings\":[";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const RecordedFinding f = recorded(r.findings[i]);
    s += fmt::format("{}{{\"verdict\":\"{}\",\"kind\":", i ? "," : "", core::to_string(f.verdict));
    core::append_json_string(s, core::to_string(f.kind));
    s += ",\"summary\":";
    core::append_json_string(s, f.summary);
    s += ",\"sites\":[";
    for (size_t k = 0; k < f.sites.size(); ++k) {
      if (k) s += ',';
      core::append_json_string(s, f.sites[k]);
    }
    s += "]}";
  }
  s += "]}";
  out_ << s << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error(fmt::format("writing the trace file {} failed", path_));
}

}  // namespace ppspec::traces
