#include "verify/oracles/backend_diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "core/op.h"
#include "core/probes.h"
#include "verify/findings.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {

void OpLog::on_event(const core::Event& e) {
  if (e.kind == core::EventKind::batch_scheduled)
    batches_.push_back(
        fmt::format("step {}: [{}]", e.step, fmt::join(core::BatchScheduledProbe::decode(e).request_ids, ", ")));
  if (e.kind != core::EventKind::op_posted || !e.has_op) return;
  const Key key{std::string(e.comm), e.rank};
  auto& ops = ops_[key];
  auto& steps = steps_[key];
  ops.push_back(core::describe(e.op));
  steps.push_back(e.op.label.step);
  PPSPEC_ASSERT(ops.size() == steps.size(), "{} operations of rank{} on '{}', {} steps", ops.size(), e.rank, key.first,
                steps.size());
}

namespace {

core::Finding divergence(std::string summary) {
  PPSPEC_ASSERT(!summary.empty());
  core::Finding f;
  f.verdict = core::Verdict::output_divergence;
  f.kind = core::FindingKind::sim_gpu;
  f.summary = std::move(summary);
  return f;
}

// The first index where two sequences differ, or their common length when one is a prefix.
template <typename T>
size_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  PPSPEC_ASSERT(i <= a.size() && i <= b.size());
  return i;
}

std::optional<core::Finding> compare_one(const engine::RequestRecord& s, const engine::RequestRecord& g) {
  const int64_t id = s.spec.id;
  const size_t t = first_difference(s.output, g.output);
  if (t < s.output.size() || t < g.output.size()) {
    auto step_of = [](const engine::RequestRecord& r, size_t i) {
      return i < r.output_step.size() ? r.output_step[i] : -1;
    };
    core::Finding f =
        divergence(fmt::format("request {}: output token {} differs between the simulator and the GPUs", id, t));
    f.request = id;
    f.engine_step = step_of(s, t);
    f.details.push_back(fmt::format("simulator: {} (engine step {})", token_list(s.output), step_of(s, t)));
    f.details.push_back(fmt::format("GPUs:      {} (engine step {})", token_list(g.output), step_of(g, t)));
    return f;
  }
  const size_t d = first_difference(s.verified_drafts, g.verified_drafts);
  if (d < s.verified_drafts.size() || d < g.verified_drafts.size()) {
    auto at = [](const engine::RequestRecord& r, size_t i) {
      return i < r.verified_drafts.size()
                 ? fmt::format("{} at engine step {}", token_list(r.verified_drafts[i]), r.verified_step[i])
                 : std::string("nothing");
    };
    core::Finding f = divergence(fmt::format("request {}: the drafts verified at its decode step {} differ", id, d));
    f.request = id;
    f.engine_step = d < s.verified_step.size() ? s.verified_step[d] : -1;
    f.details.push_back("simulator: " + at(s, d));
    f.details.push_back("GPUs:      " + at(g, d));
    return f;
  }
  return std::nullopt;
}

}  // namespace

std::optional<core::Finding> compare_requests(const std::vector<engine::RequestRecord>& sim,
                                              const std::vector<engine::RequestRecord>& gpu) {
  std::map<int64_t, const engine::RequestRecord*> by_id;
  for (const auto& r : gpu) by_id[r.spec.id] = &r;
  for (const auto& s : sim) {
    const auto it = by_id.find(s.spec.id);
    if (it == by_id.end())
      return divergence(fmt::format("request {} ran on the simulator and not on the GPUs", s.spec.id));
    if (auto f = compare_one(s, *it->second)) return f;
  }
  if (gpu.size() != sim.size())
    return divergence(fmt::format("the GPUs ran {} requests, the simulator {}", gpu.size(), sim.size()));
  return std::nullopt;
}

std::optional<core::Finding> compare_ops(const OpLog& sim, const OpLog& gpu) {
  auto keys = [](const OpLog& l) {
    std::vector<OpLog::Key> k;
    for (const auto& [key, ops] : l.ops()) k.push_back(key);
    return k;
  };
  if (keys(sim) != keys(gpu))
    return divergence(fmt::format("the simulator posted on {} (communicator, rank) pairs, the GPUs on {}",
                                  keys(sim).size(), keys(gpu).size()));
  for (const auto& [key, s] : sim.ops()) {
    const std::vector<std::string>& g = gpu.ops().at(key);
    const size_t i = first_difference(s, g);
    if (i == s.size() && i == g.size()) continue;
    auto op = [](const std::vector<std::string>& v, size_t n) { return n < v.size() ? v[n] : std::string("nothing"); };
    core::Finding f = divergence(fmt::format("rank{} on '{}': operation {} differs between the simulator and the GPUs",
                                             key.second, key.first, i));
    const auto& steps = sim.steps().at(key);
    PPSPEC_ASSERT(steps.size() == s.size() && (i < s.size() || i < g.size()), "operation {} of {} and {}", i, s.size(),
                  g.size());
    f.engine_step = i < steps.size() ? steps[i] : -1;
    f.details.push_back("simulator: " + op(s, i));
    f.details.push_back("GPUs:      " + op(g, i));
    f.sites.push_back(core::Site{key.second, "", key.first, static_cast<int64_t>(i), op(s, i), ""});
    return f;
  }
  return std::nullopt;
}

std::string agreement(const std::vector<engine::RequestRecord>& requests, const OpLog& ops) {
  size_t tokens = 0, blocks = 0, posted = 0;
  for (const auto& r : requests) {
    tokens += r.output.size();
    blocks += r.verified_drafts.size();
  }
  for (const auto& [key, v] : ops.ops()) posted += v.size();
  return fmt::format(
      "identical: {} requests' {} tokens and {} verified draft blocks; {} operations posted by {} "
      "(communicator, rank) pairs over {} batches",
      requests.size(), tokens, blocks, posted, ops.ops().size(), ops.batches().size());
}

}  // namespace ppspec::verify
