#include "verify/serving_oracles.h"

#include <fmt/format.h>

#include "engine/golden.h"

namespace ppspec::verify {
namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  return s + "]";
}

const engine::RequestRecord* find(const std::vector<engine::RequestRecord>& rs, int64_t id) {
  for (const auto& r : rs)
    if (r.spec.id == id) return &r;
  return nullptr;
}

}  // namespace

std::optional<core::Finding> golden_oracle(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt,
                                           const std::vector<engine::RequestRecord>& requests) {
  for (const engine::RequestRecord& r : requests) {
    if (r.spec.spread != 0) continue;  // the golden continuation is greedy
    const std::vector<int64_t> golden = engine::golden_continuation(ckpt, cfg.model, r.spec.prompt, r.spec.max_tokens);
    const size_t n = std::min(golden.size(), r.output.size());
    size_t i = 0;
    while (i < n && golden[i] == r.output[i]) ++i;
    const bool complete_ok = r.aborted ? true : r.output.size() == golden.size();
    if (i == n && complete_ok) continue;
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = "golden";
    const core::RankId last = cfg.topology.rank_of(cfg.topology.pp - 1, 0);
    if (i < n) {
      f.summary = fmt::format("request {} output token #{} is {}, the golden continuation has {}", r.spec.id, i, r.output[i],
                              golden[i]);
    } else {
      f.summary = fmt::format("request {} produced {} tokens, the golden continuation {}", r.spec.id, r.output.size(),
                              golden.size());
    }
    f.details.push_back(fmt::format("prompt {}", [&] {
      std::vector<int64_t> p(r.spec.prompt.begin(), r.spec.prompt.end());
      return list(p);
    }()));
    f.details.push_back(fmt::format("engine {}", list(r.output)));
    f.details.push_back(fmt::format("golden {}", list(golden)));
    f.sites.push_back(core::Site{last, fmt::format("rank{}.host", last), "", -1,
                                 fmt::format("request {} token #{} (sampled on the last stage)", r.spec.id, i), ""});
    return f;
  }
  return std::nullopt;
}

std::optional<core::Finding> pp_invariance_oracle(const engine::EngineConfig& cfg,
                                                  const std::vector<engine::RequestRecord>& run,
                                                  const std::vector<engine::RequestRecord>& reference) {
  const core::RankId last = cfg.topology.rank_of(cfg.topology.pp - 1, 0);
  for (const engine::RequestRecord& r : run) {
    const engine::RequestRecord* ref = find(reference, r.spec.id);
    if (ref == nullptr) continue;
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = "pp-invariance";
    const size_t n = std::min(r.output.size(), ref->output.size());
    size_t i = 0;
    while (i < n && r.output[i] == ref->output[i]) ++i;
    if (i < n || r.output.size() != ref->output.size()) {
      f.summary = fmt::format("request {} differs from the same scenario at pp = 1 at output token #{}", r.spec.id, i);
      f.details.push_back(fmt::format("pp = {}: {}", cfg.topology.pp, list(r.output)));
      f.details.push_back(fmt::format("pp = 1: {}", list(ref->output)));
      f.sites.push_back(core::Site{last, fmt::format("rank{}.host", last), "", -1, fmt::format("request {}", r.spec.id), ""});
      return f;
    }
    const size_t steps = std::min(r.verified_drafts.size(), ref->verified_drafts.size());
    for (size_t s = 0; s < steps; ++s) {
      const auto& a = r.verified_drafts[s];
      const auto& b = ref->verified_drafts[s];
      if (a.size() != b.size() || a == b) continue;
      f.summary = fmt::format("request {} verified different drafts at its decode step {} than at pp = 1", r.spec.id, s);
      f.details.push_back(fmt::format("pp = {}: {}", cfg.topology.pp, list(a)));
      f.details.push_back(fmt::format("pp = 1: {}", list(b)));
      f.sites.push_back(core::Site{last, fmt::format("rank{}.host", last), "", -1,
                                   fmt::format("request {} decode step {}", r.spec.id, s), ""});
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace ppspec::verify
