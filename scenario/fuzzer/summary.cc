#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_bytes.h"
#include "core/json_depth.h"
#include "core/json_shown.h"
#include "scenario/fuzzer/campaign.h"

namespace ppspec::fuzzer {
namespace {

using Json = nlohmann::json;

// The coverage counters by name: one table for writing, reading and merging.
constexpr std::pair<const char*, uint64_t Coverage::*> kPaths[] = {
    {"programs", &Coverage::programs},
    {"pp_gt1", &Coverage::pp_gt1},
    {"drafts", &Coverage::drafts},
    {"graph_padding", &Coverage::graph_padding},
    {"chunked_prefill", &Coverage::chunked_prefill},
    {"slot_reuse", &Coverage::slot_reuse},
    {"length_cap", &Coverage::length_cap},
    {"aborts", &Coverage::aborts},
    {"abort_in_flight", &Coverage::abort_in_flight},
    {"preemptions", &Coverage::preemptions},
    {"preempted_in_step", &Coverage::preempted_in_step},
    {"steps_ahead", &Coverage::steps_ahead},
    {"prefix_hits", &Coverage::prefix_hits},
    {"recurrent", &Coverage::recurrent},
    {"budget_below_k", &Coverage::budget_below_k},
    {"eagle_taps_relayed", &Coverage::eagle_taps_relayed},
    {"eagle_default_taps", &Coverage::eagle_default_taps},
    {"dummy_batches", &Coverage::dummy_batches},
    {"kv_pulls", &Coverage::kv_pulls},
    {"mla_decode", &Coverage::mla_decode},
    {"stop_string_trims", &Coverage::stop_string_trims},
    {"pinned_inputs", &Coverage::pinned_inputs},
};

Json to_json(const Found& f) {
  return Json{{"verdict", core::to_string(f.verdict)},
              {"kind", f.kind},
              {"summary", f.summary},
              {"file", f.file},
              {"command", f.command},
              {"case", f.case_index},
              {"found_after_s", f.found_after_s},
              {"shrunk_after_s", f.shrunk_after_s},
              {"shrink_steps", f.shrink_steps},
              {"shrink_runs", f.shrink_runs},
              {"original", f.original},
              {"shrunk", f.shrunk},
              {"requests", f.requests},
              {"ranks", f.ranks},
              {"internal", f.internal},
              {"capped", f.capped}};
}

// A count the summary holds: an integer from 0 to 2^53 (exact in a double), never a negative one
// read as unsigned.
uint64_t count_of(const Json& j, const std::string& key) {
  const Json& v = j.at(key);
  if (!v.is_number_unsigned() || v.get<uint64_t>() > (uint64_t{1} << 53))
    throw std::runtime_error(fmt::format("'{}' is {}: expected a count (an integer from 0)", key, core::shown(v)));
  return v.get<uint64_t>();
}

Found found_of(const Json& j) {
  Found f;
  const auto v = core::parse_verdict(j.at("verdict").get<std::string>());
  if (!v) throw std::runtime_error("unknown verdict");
  f.verdict = *v;
  f.kind = j.at("kind").get<std::string>();
  f.summary = j.at("summary").get<std::string>();
  f.file = j.at("file").get<std::string>();
  f.command = j.at("command").get<std::string>();
  f.case_index = j.at("case").get<uint64_t>();
  f.found_after_s = j.at("found_after_s").get<double>();
  f.shrunk_after_s = j.at("shrunk_after_s").get<double>();
  f.shrink_steps = j.at("shrink_steps").get<int>();
  f.shrink_runs = j.at("shrink_runs").get<int>();
  f.original = j.at("original").get<std::string>();
  f.shrunk = j.at("shrunk").get<std::string>();
  f.requests = j.at("requests").get<int>();
  f.ranks = j.at("ranks").get<int>();
  f.internal = j.value("internal", false);
  f.capped = j.value("capped", false);
  return f;
}

}  // namespace

void write_summary(const FuzzReport& r, const FuzzOptions& opts) {
  Json paths = Json::object();
  for (const auto& [name, field] : kPaths) paths[name] = r.coverage.*field;
  Json found = Json::array();
  for (const Found& f : r.found) found.push_back(to_json(f));
  const Json j{{"ppspec_fuzz", 1}, {"seed", opts.seed},           {"shard", opts.shard},  {"shards", opts.shards},
               {"cases", r.cases}, {"failures", r.failures},      {"seconds", r.seconds}, {"paths", paths},
               {"found", found},   {"interrupted", r.interrupted}};
  std::filesystem::create_directories(opts.out_dir);
  std::ofstream(opts.out_dir + "/summary.json", std::ios::binary) << j.dump(1) << '\n';
}

FuzzReport read_summary(const std::string& dir) {
  const std::string file = dir + "/summary.json";
  const core::FileBytes bytes = core::read_file_bytes(file);
  if (!bytes.ok())
    throw core::InputError(file, 0, "no summary here: is this the --out folder of a finished `ppspec fuzz`?");
  if (core::json_too_deep(bytes.bytes, 4))
    throw core::InputError(file, 0, "a malformed fuzzing summary: nested too deeply");
  const Json j = Json::parse(bytes.bytes, nullptr, false);
  FuzzReport r;
  try {
    if (j.is_discarded() || !j.is_object() || !j.contains("ppspec_fuzz"))
      throw std::runtime_error("not a fuzzing summary");
    r.cases = count_of(j, "cases");
    r.failures = count_of(j, "failures");
    r.seconds = j.at("seconds").get<double>();
    if (!(r.seconds >= 0)) throw std::runtime_error("'seconds' is negative");
    r.interrupted = j.value("interrupted", false);  // a summary written before Ctrl-C was said: false
    // A summary written before a path was counted reads 0 for it (prefix_hits came with prefix caching).
    for (const auto& [name, field] : kPaths)
      r.coverage.*field = j.at("paths").contains(name) ? count_of(j.at("paths"), name) : 0;
    for (const Json& f : j.at("found")) r.found.push_back(found_of(f));
    // Every failure is shrunk and listed (the campaign stops at the first without --keep-going).
    if (r.failures != r.found.size() || r.failures > r.cases)
      throw std::runtime_error(
          fmt::format("{} failures in {} cases with {} listed under 'found': a campaign lists every failure "
                      "it counts, and counts no more failures than cases",
                      r.failures, r.cases, r.found.size()));
  } catch (const std::exception& e) {
    throw core::InputError(file, 0, fmt::format("a malformed fuzzing summary: {}", e.what()));
  }
  return r;
}

FuzzReport merge(const std::vector<FuzzReport>& parts) {
  FuzzReport m;
  for (const FuzzReport& p : parts) {
    m.interrupted = m.interrupted || p.interrupted;
    m.cases += p.cases;
    m.failures += p.failures;
    m.seconds = std::max(m.seconds, p.seconds);
    for (const auto& [name, field] : kPaths) m.coverage.*field += p.coverage.*field;
    m.found.insert(m.found.end(), p.found.begin(), p.found.end());
  }
  std::sort(m.found.begin(), m.found.end(),
            [](const Found& a, const Found& b) { return a.found_after_s < b.found_after_s; });
  return m;
}

}  // namespace ppspec::fuzzer
