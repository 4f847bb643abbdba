#include "report/serving_records.h"

#include <fmt/format.h>
#include <map>
#include <stdexcept>

#include "engine/workload.h"

namespace ppspec::report {

nlohmann::json requests_json(const std::vector<engine::RequestRecord>& requests) {
  nlohmann::json a = nlohmann::json::array();
  for (const engine::RequestRecord& r : requests)
    a.push_back({{"id", r.spec.id},
                 {"idx", r.idx},
                 {"num_computed", r.num_computed},
                 {"blocks", r.blocks},
                 {"output", r.output},
                 {"output_step", r.output_step},
                 {"output_time", r.output_time},
                 {"verified_drafts", r.verified_drafts},
                 {"verified_step", r.verified_step},
                 {"verified_position", r.verified_position},
                 {"prefill_tokens", r.prefill_tokens},
                 {"preemptions", r.preemptions},
                 {"steps_ahead", r.steps_ahead},
                 {"first_preempted_at", r.first_preempted_at},
                 {"accepted_drafts", r.accepted_drafts},
                 {"proposed_drafts", r.proposed_drafts},
                 {"decode_steps", r.decode_steps},
                 {"last_step", r.last_step},
                 {"admitted", r.admitted},
                 {"in_flight", r.in_flight()},
                 {"finished", r.finished},
                 {"aborted", r.aborted}});
  return a;
}

std::vector<engine::RequestRecord> requests_from_json(const engine::EngineConfig& cfg, const nlohmann::json& j) {
  std::map<int64_t, engine::RequestSpec> specs;
  for (engine::RequestSpec& s : engine::make_workload(cfg)) specs.emplace(s.id, std::move(s));
  if (!j.is_array()) throw std::runtime_error("'requests' is not an array");
  std::vector<engine::RequestRecord> out;
  for (const nlohmann::json& x : j) {
    const int64_t id = x.at("id").get<int64_t>();
    const auto it = specs.find(id);
    if (it == specs.end()) throw std::runtime_error(fmt::format("request {} is not in the scenario's workload", id));
    engine::RequestRecord r;
    r.spec = it->second;
    r.idx = x.at("idx").get<int32_t>();
    r.num_computed = x.at("num_computed").get<int32_t>();
    r.blocks = x.at("blocks").get<std::vector<int32_t>>();
    r.output = x.at("output").get<std::vector<int64_t>>();
    r.output_step = x.at("output_step").get<std::vector<int64_t>>();
    r.output_time = x.at("output_time").get<std::vector<core::Time>>();
    r.verified_drafts = x.at("verified_drafts").get<std::vector<std::vector<int64_t>>>();
    r.verified_step = x.at("verified_step").get<std::vector<int64_t>>();
    // Written since preemption exists; an older record verified its drafts at consecutive steps.
    r.verified_position = x.value("verified_position", std::vector<int64_t>(r.verified_step.size(), -1));
    r.prefill_tokens = x.value("prefill_tokens", static_cast<int32_t>(r.spec.prompt.size()));
    r.preemptions = x.value("preemptions", 0);
    r.steps_ahead = x.value("steps_ahead", 0);  // written since the lookahead batch exists
    r.first_preempted_at = x.value("first_preempted_at", int64_t{-1});
    r.accepted_drafts = x.at("accepted_drafts").get<int64_t>();
    r.proposed_drafts = x.at("proposed_drafts").get<int64_t>();
    r.decode_steps = x.at("decode_steps").get<int>();
    r.last_step = x.at("last_step").get<int64_t>();
    r.admitted = x.at("admitted").get<bool>();
    if (x.at("in_flight").get<bool>()) r.steps_in_flight.push_back(r.last_step);
    r.finished = x.at("finished").get<bool>();
    r.aborted = x.at("aborted").get<bool>();
    // The oracles index these side by side: a record that is not one is unreadable, not a crash.
    if (r.output_step.size() != r.output.size() || r.output_time.size() != r.output.size() ||
        r.verified_step.size() != r.verified_drafts.size() || r.verified_position.size() != r.verified_drafts.size())
      throw std::runtime_error(fmt::format("request {}: its per-token and per-step lists differ in length", id));
    out.push_back(std::move(r));
  }
  return out;
}

ServingFigures figures_of(const serving::ServingRun& run) {
  return ServingFigures{run.stats.steps,
                        static_cast<int64_t>(run.requests.size()),
                        run.stats.output_tokens,
                        run.stats.acceptance_rate(),
                        run.stats.tokens_per_step(),
                        run.coverage,
                        run.stats.preemptions,
                        run.stats.steps_ahead,
                        run.stats.prefix_hit_blocks,
                        run.stats.prefix_evictions,
                        run.stats.dummy_batches};
}

nlohmann::json serving_stats_json(const engine::ServingStats& s) {
  nlohmann::json j = {{"steps", s.steps},
                      {"output_tokens", s.output_tokens},
                      {"drafts_verified", s.drafts_verified},
                      {"drafts_accepted", s.drafts_accepted},
                      {"preemptions", s.preemptions}};
  // Only where used: the records of runs without the lookahead batch or prefix caching stay as they were.
  if (s.steps_ahead > 0) j["steps_ahead"] = s.steps_ahead;
  if (s.prefix_hit_blocks > 0 || s.prefix_evictions > 0) {
    j["prefix_hit_blocks"] = s.prefix_hit_blocks;
    j["prefix_evictions"] = s.prefix_evictions;
  }
  if (s.dummy_batches > 0) j["dummy_batches"] = s.dummy_batches;
  return j;
}

engine::ServingStats serving_stats_from_json(const nlohmann::json& j) {
  engine::ServingStats s;
  s.steps = j.at("steps").get<int64_t>();
  s.output_tokens = j.at("output_tokens").get<int64_t>();
  s.drafts_verified = j.at("drafts_verified").get<int64_t>();
  s.drafts_accepted = j.at("drafts_accepted").get<int64_t>();
  s.preemptions = j.value("preemptions", int64_t{0});  // written since preemption exists
  s.steps_ahead = j.value("steps_ahead", int64_t{0});  // written since the lookahead batch exists
  s.prefix_hit_blocks = j.value("prefix_hit_blocks", int64_t{0});
  s.prefix_evictions = j.value("prefix_evictions", int64_t{0});
  s.dummy_batches = j.value("dummy_batches", int64_t{0});  // written since data parallelism exists
  return s;
}

}  // namespace ppspec::report
