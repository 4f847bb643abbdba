#include "runs/gpu_jobs/result_codec.h"

#include <fmt/format.h>
#include <map>
#include <stdexcept>

#include "core/culprit_json.h"
#include "engine/workload.h"

namespace ppspec::gpu_jobs {
namespace {

using Json = nlohmann::json;

Json site_json(const core::Site& s) {
  return {{"rank", s.rank},
          {"actor", s.actor},
          {"comm", s.comm},
          {"cseq", s.cseq},
          {"what", s.what},
          {"origin", s.origin},
          {"wait", static_cast<int>(s.wait)}};
}

core::Site site_of(const Json& j) {
  const int wait = j.at("wait").get<int>();
  if (wait < 0 || wait > static_cast<int>(core::SiteWait::counterpart_unposted))
    throw std::runtime_error("a site waiting in nothing known");
  return core::Site{j.at("rank").get<core::RankId>(), j.at("actor").get<std::string>(),
                    j.at("comm").get<std::string>(),  j.at("cseq").get<int64_t>(),
                    j.at("what").get<std::string>(),  j.at("origin").get<std::string>(),
                    static_cast<core::SiteWait>(wait)};
}

Json mismatched_json(const core::OpFields& m) {
  return {{"kind", m.kind},   {"dtype", m.dtype},     {"count", m.count},          {"root", m.root},
          {"label", m.label}, {"capture", m.capture}, {"all_to_all", m.all_to_all}};
}

core::OpFields mismatched_of(const Json& j) {
  core::OpFields m;
  for (auto [key, field] : {std::pair{"kind", &m.kind},
                            {"dtype", &m.dtype},
                            {"count", &m.count},
                            {"root", &m.root},
                            {"label", &m.label},
                            {"capture", &m.capture},
                            {"all_to_all", &m.all_to_all}})
    *field = j.at(key).get<bool>();
  return m;
}

Json finding_json(const core::Finding& f) {
  Json sites = Json::array();
  for (const core::Site& s : f.sites) sites.push_back(site_json(s));
  return {{"verdict", core::to_string(f.verdict)},
          {"kind", std::string(core::to_string(f.kind))},
          {"time", f.time},
          {"sched_step", f.sched_step},
          {"engine_step", f.engine_step},
          {"request", f.request},
          {"summary", f.summary},
          {"sites", std::move(sites)},
          {"details", f.details},
          {"dot", f.dot},
          {"mismatched", mismatched_json(f.mismatched)},
          {"culprit", core::culprit_json(f.culprit)}};
}

core::Finding finding_of(const Json& j) {
  core::Finding f;
  const auto verdict = core::parse_verdict(j.at("verdict").get<std::string>());
  if (!verdict) throw std::runtime_error("a finding of no known verdict");
  f.verdict = *verdict;
  const auto kind = core::parse_finding_kind(j.at("kind").get<std::string>());
  if (!kind) throw std::runtime_error("a finding of no known kind");
  f.kind = *kind;
  f.time = j.at("time").get<core::Time>();
  f.sched_step = j.at("sched_step").get<uint64_t>();
  f.engine_step = j.at("engine_step").get<int64_t>();
  f.request = j.at("request").get<int64_t>();
  f.summary = j.at("summary").get<std::string>();
  for (const Json& s : j.at("sites")) f.sites.push_back(site_of(s));
  f.details = j.at("details").get<std::vector<std::string>>();
  f.dot = j.at("dot").get<std::string>();
  f.mismatched = mismatched_of(j.at("mismatched"));
  f.culprit = core::culprit_of_json(j.at("culprit"));
  return f;
}

Json result_json(const core::RunResult& r) {
  Json findings = Json::array();
  for (const core::Finding& f : r.findings) findings.push_back(finding_json(f));
  Json notes = Json::array();
  for (const core::Finding& f : r.notes) notes.push_back(finding_json(f));
  const core::RunStats& s = r.stats;
  return {{"verdict", core::to_string(r.verdict)},
          {"findings", std::move(findings)},
          {"notes", std::move(notes)},
          {"stats",
           {{"sched_steps", s.sched_steps},
            {"sim_time", s.sim_time},
            {"events", s.events},
            {"ops_posted", s.ops_posted},
            {"pairs", s.pairs},
            {"collective_slots", s.collective_slots},
            {"fibers", s.fibers}}},
          {"decisions", r.decisions}};
}

core::RunResult result_of(const Json& j) {
  core::RunResult r;
  const auto verdict = core::parse_verdict(j.at("verdict").get<std::string>());
  if (!verdict) throw std::runtime_error("a result of no known verdict");
  r.verdict = *verdict;
  for (const Json& f : j.at("findings")) r.findings.push_back(finding_of(f));
  for (const Json& f : j.at("notes")) r.notes.push_back(finding_of(f));
  const Json& s = j.at("stats");
  r.stats = core::RunStats{s.at("sched_steps").get<uint64_t>(), s.at("sim_time").get<core::Time>(),
                           s.at("events").get<uint64_t>(),      s.at("ops_posted").get<uint64_t>(),
                           s.at("pairs").get<uint64_t>(),       s.at("collective_slots").get<uint64_t>(),
                           s.at("fibers").get<uint64_t>()};
  r.decisions = j.at("decisions").get<std::vector<uint32_t>>();
  return r;
}

Json record_json(const engine::RequestRecord& r) {
  return {{"id", r.spec.id},
          {"idx", r.idx},
          {"num_computed", r.num_computed},
          {"prefill_tokens", r.prefill_tokens},
          {"blocks", r.blocks},
          {"block_hashes", r.block_hashes},
          {"cached_blocks", r.cached_blocks},
          {"prefix_hit_blocks", r.prefix_hit_blocks},
          {"output", r.output},
          {"output_step", r.output_step},
          {"output_time", r.output_time},
          {"verified_drafts", r.verified_drafts},
          {"verified_step", r.verified_step},
          {"verified_position", r.verified_position},
          {"accepted_drafts", r.accepted_drafts},
          {"proposed_drafts", r.proposed_drafts},
          {"drafts_next", r.drafts_next},
          {"decode_steps", r.decode_steps},
          {"preemptions", r.preemptions},
          {"preempted_in_step", r.preempted_in_step},
          {"steps_ahead", r.steps_ahead},
          {"first_preempted_at", r.first_preempted_at},
          {"last_step", r.last_step},
          {"admitted_step", r.admitted_step},
          {"steps_in_flight", r.steps_in_flight},
          {"tokens_in_flight", r.tokens_in_flight},
          {"admitted", r.admitted},
          {"finished", r.finished},
          {"aborted", r.aborted},
          {"abort_arrived", r.abort_arrived},
          {"dummy", r.dummy},
          {"text", r.text},
          {"stop_string", r.stop_string},
          {"returned_tokens", r.returned_tokens}};
}

template <typename T>
void read(const Json& j, const char* key, T& into) {
  into = j.at(key).get<T>();
}

// `spec` is the workload's request of the record's id: the workload is the scenario's, not the
// child's to say.
engine::RequestRecord record_of(const Json& j, engine::RequestSpec spec) {
  engine::RequestRecord r;
  r.spec = std::move(spec);
  read(j, "idx", r.idx), read(j, "num_computed", r.num_computed), read(j, "prefill_tokens", r.prefill_tokens);
  read(j, "blocks", r.blocks), read(j, "block_hashes", r.block_hashes), read(j, "cached_blocks", r.cached_blocks);
  read(j, "prefix_hit_blocks", r.prefix_hit_blocks), read(j, "output", r.output);
  read(j, "output_step", r.output_step), read(j, "output_time", r.output_time);
  read(j, "verified_drafts", r.verified_drafts), read(j, "verified_step", r.verified_step);
  read(j, "verified_position", r.verified_position), read(j, "accepted_drafts", r.accepted_drafts);
  read(j, "proposed_drafts", r.proposed_drafts), read(j, "drafts_next", r.drafts_next);
  read(j, "decode_steps", r.decode_steps), read(j, "preemptions", r.preemptions);
  read(j, "steps_ahead", r.steps_ahead), read(j, "first_preempted_at", r.first_preempted_at);
  read(j, "preempted_in_step", r.preempted_in_step);
  read(j, "last_step", r.last_step), read(j, "admitted_step", r.admitted_step);
  read(j, "steps_in_flight", r.steps_in_flight), read(j, "tokens_in_flight", r.tokens_in_flight);
  read(j, "admitted", r.admitted), read(j, "finished", r.finished), read(j, "aborted", r.aborted);
  read(j, "abort_arrived", r.abort_arrived), read(j, "dummy", r.dummy);
  read(j, "text", r.text), read(j, "stop_string", r.stop_string), read(j, "returned_tokens", r.returned_tokens);
  if (r.returned_tokens < -1 || r.returned_tokens > static_cast<int32_t>(r.output.size()))
    throw std::runtime_error(fmt::format("request {}: it returned {} of its {} output tokens", r.spec.id,
                                         r.returned_tokens, r.output.size()));
  // The oracles index these side by side: a record that is not one is unreadable, not a crash.
  if (r.output_step.size() != r.output.size() || r.output_time.size() != r.output.size() ||
      r.verified_step.size() != r.verified_drafts.size() || r.verified_position.size() != r.verified_drafts.size())
    throw std::runtime_error(fmt::format("request {}: its per-token and per-step lists differ in length", r.spec.id));
  return r;
}

std::vector<engine::RequestRecord> records_of(const Json& j, const engine::EngineConfig& cfg) {
  std::map<int64_t, engine::RequestSpec> specs;
  for (engine::RequestSpec& s : engine::make_workload(cfg)) specs.emplace(s.id, std::move(s));
  std::vector<engine::RequestRecord> out;
  for (const Json& x : j) {
    const int64_t id = x.at("id").get<int64_t>();
    const auto it = specs.find(id);
    if (it == specs.end()) throw std::runtime_error(fmt::format("request {} is not in the scenario's workload", id));
    out.push_back(record_of(x, it->second));
  }
  return out;
}

Json stats_json(const engine::ServingStats& s) {
  return {{"steps", s.steps},
          {"numbered_steps", s.numbered_steps},
          {"warmup_steps", s.warmup_steps},
          {"output_tokens", s.output_tokens},
          {"drafts_verified", s.drafts_verified},
          {"drafts_accepted", s.drafts_accepted},
          {"preemptions", s.preemptions},
          {"preempted_in_step", s.preempted_in_step},
          {"steps_ahead", s.steps_ahead},
          {"prefix_hit_blocks", s.prefix_hit_blocks},
          {"prefix_evictions", s.prefix_evictions},
          {"budget_below_k", s.budget_below_k},
          {"dummy_batches", s.dummy_batches}};
}

engine::ServingStats stats_of(const Json& j) {
  engine::ServingStats s;
  read(j, "steps", s.steps), read(j, "output_tokens", s.output_tokens);
  read(j, "numbered_steps", s.numbered_steps), read(j, "warmup_steps", s.warmup_steps);
  read(j, "drafts_verified", s.drafts_verified), read(j, "drafts_accepted", s.drafts_accepted);
  read(j, "preemptions", s.preemptions), read(j, "steps_ahead", s.steps_ahead);
  read(j, "preempted_in_step", s.preempted_in_step);
  read(j, "prefix_hit_blocks", s.prefix_hit_blocks), read(j, "prefix_evictions", s.prefix_evictions);
  read(j, "budget_below_k", s.budget_below_k), read(j, "dummy_batches", s.dummy_batches);
  return s;
}

Json coverage_json(const verify::OnlineCoverage& c) {
  return {{"rows_checked", c.rows_checked},
          {"samples_checked", c.samples_checked},
          {"requests_followed", c.requests_followed},
          {"requests_unfollowable", c.requests_unfollowable},
          {"requests_forgotten_idle", c.requests_forgotten_idle},
          {"requests_forgotten_for_room", c.requests_forgotten_for_room},
          {"monitor_skips", c.monitor_skips}};
}

verify::OnlineCoverage coverage_of(const Json& j) {
  verify::OnlineCoverage c;
  read(j, "rows_checked", c.rows_checked), read(j, "samples_checked", c.samples_checked);
  read(j, "requests_followed", c.requests_followed), read(j, "requests_unfollowable", c.requests_unfollowable);
  read(j, "requests_forgotten_idle", c.requests_forgotten_idle);
  read(j, "requests_forgotten_for_room", c.requests_forgotten_for_room);
  read(j, "monitor_skips", c.monitor_skips);
  return c;
}

Json records_json(const std::vector<engine::RequestRecord>& requests) {
  Json a = Json::array();
  for (const engine::RequestRecord& r : requests) a.push_back(record_json(r));
  return a;
}

}  // namespace

Json encode(const runs::Executed& e) {
  const serving::ServingRun* s = e.serving();
  Json j = {{"kind", s != nullptr ? "serving" : "program"}, {"result", result_json(e.result())}};
  if (s == nullptr) return j;
  j["completed"] = s->completed;
  j["stats"] = stats_json(s->stats);
  j["requests"] = records_json(s->requests);
  j["coverage"] = coverage_json(s->coverage);
  Json paths = Json::object();
  for (const serving::PathField& p : serving::path_fields()) paths[p.name] = s->paths.*p.field;
  j["paths"] = std::move(paths);
  return j;
}

Json encode_error(const std::string& error, bool bad_input) { return {{"error", error}, {"bad_input", bad_input}}; }

runs::Executed decode(const Json& j, const scenario::Scenario& sc) {
  const auto* serving_scenario = std::get_if<serving::ServingScenario>(&sc);
  const std::string kind = j.at("kind").get<std::string>();
  if (kind != (serving_scenario != nullptr ? "serving" : "program"))
    throw std::runtime_error(fmt::format("a result of a {} run for a scenario of the other kind", kind));
  core::RunResult result = result_of(j.at("result"));
  if (serving_scenario == nullptr) return runs::Executed{std::move(result)};
  serving::ServingRun run;
  run.result = std::move(result);
  read(j, "completed", run.completed);
  run.stats = stats_of(j.at("stats"));
  run.requests = records_of(j.at("requests"), serving_scenario->config);
  run.coverage = coverage_of(j.at("coverage"));
  for (const serving::PathField& p : serving::path_fields()) read(j.at("paths"), p.name, run.paths.*p.field);
  return runs::Executed{std::move(run)};
}

}  // namespace ppspec::gpu_jobs
