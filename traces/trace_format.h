// The JSON Lines trace format, shared by its writer and its reader: a header line, one line per
// event (core::to_json), a trailer line with the verdict and the recorded schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/scenario_kind.h"
#include "core/types.h"
#include "core/verdict.h"

namespace ppspec::traces {

inline constexpr int kTraceVersion = 1;

// What wrote a trace: the simulator, ppspec's real backend ("gpu"), or a job's NCCL profiler plugin
// traces merged by `ppspec watch` ("nccl-profiler"). The header's `backend` field.
enum class TraceBackend : uint8_t { sim, gpu, nccl_profiler };
std::string_view to_string(TraceBackend b);
std::optional<TraceBackend> parse_trace_backend(std::string_view s);

struct TraceHeader {
  std::string scenario{};
  std::string file{};  // the scenario file as it was named on the command line
  uint64_t seed = 0;
  std::string strategy{};
  TraceBackend backend = TraceBackend::sim;
  std::optional<core::ScenarioKind> kind{};  // absent in older traces
  std::optional<uint64_t> scenario_hash{};   // core::fnv1a_bytes of the scenario file; absent in older traces
  // The scenario file itself, so that the trace travels alone (`check`, `show`, `export`, `replay`
  // from any folder); empty in older traces and GPU children's. Its hash is `scenario_hash`.
  std::string scenario_text{};
  // scenario::toml_content_hash of the file: what it says, comments and blank lines aside.
  std::optional<uint64_t> content_hash{};
};

// The largest scenario a trace embeds: a scenario is a page or two; a larger file is named only.
inline constexpr size_t kEmbeddedScenarioBytesMax = size_t{1} << 20;

// A finding as the trailer records it: what replay compares (the events alone do not show a
// finding of a post-run oracle, nor its words).
struct RecordedFinding {
  core::Verdict verdict = core::Verdict::pass;
  core::FindingKind kind = core::FindingKind::none;
  std::string summary;
  std::vector<std::string> sites;  // "rank0 rank0.main on 'world' #3: recv i32[256] [file.toml:12]"
};

struct TraceTrailer {
  core::Verdict verdict = core::Verdict::pass;
  uint64_t steps = 0;
  core::Time sim_time = 0;
  std::optional<uint64_t> events;         // event lines written; absent in older traces
  std::vector<uint32_t> decisions;        // the recorded schedule: fiber ids chosen at contested points
  std::vector<RecordedFinding> findings;  // the run's findings, first first; absent in older traces
  int line = 0;                           // where the reader found it
};

// The scenario hash as the header spells it: 16 lower-case hex digits.
std::string hash_hex(uint64_t h);
std::optional<uint64_t> parse_hash_hex(const std::string& s);

}  // namespace ppspec::traces
