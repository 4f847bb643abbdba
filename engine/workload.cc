#include "engine/workload.h"

#include <algorithm>
#include <cmath>

#include "core/assert.h"
#include "core/rng.h"

namespace ppspec::engine {

uint32_t spread_of(double temperature) {
  if (temperature <= 0) return 0;
  return static_cast<uint32_t>(std::max(1L, std::lround(temperature * 32.0)));
}

namespace {

int32_t prompt_token(core::Rng& rng, const ModelConfig& m) {
  int32_t tok = static_cast<int32_t>(rng.below(static_cast<uint64_t>(m.vocab)));
  if (tok == m.stop_token) tok = (tok + 1) % m.vocab;
  return tok;
}

// The shared system prompts, from a stream of their own: a workload without them draws exactly
// what it drew before they existed, and one with them differs only in its prompts' first tokens.
std::vector<std::vector<int32_t>> shared_prefixes(const EngineConfig& cfg) {
  const WorkloadConfig& w = cfg.workload;
  std::vector<std::vector<int32_t>> groups;
  if (w.shared_prefix <= 0) return groups;
  core::Rng rng(core::derive_seed(w.seed, 22));
  for (int g = 0; g < w.prefix_groups; ++g) {
    std::vector<int32_t>& p = groups.emplace_back();
    for (int j = 0; j < w.shared_prefix; ++j) p.push_back(prompt_token(rng, cfg.model));
  }
  return groups;
}

}  // namespace

std::vector<RequestSpec> make_workload(const EngineConfig& cfg) {
  const WorkloadConfig& w = cfg.workload;
  core::Rng rng(core::derive_seed(w.seed, 21));
  auto in_range = [&rng](int lo, int hi) {
    return lo + static_cast<int>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
  };
  const std::vector<std::vector<int32_t>> prefixes = shared_prefixes(cfg);
  core::Rng priorities(core::derive_seed(w.seed, 23));  // a stream of its own, as the prefixes'

  std::vector<RequestSpec> reqs;
  core::Time t = 0;
  for (int i = 0; i < w.num_requests; ++i) {
    RequestSpec r;
    r.id = i;
    const int len = in_range(w.prompt_min, w.prompt_max);
    for (int j = 0; j < len; ++j) r.prompt.push_back(prompt_token(rng, cfg.model));
    if (!prefixes.empty()) {
      const std::vector<int32_t>& p = prefixes[static_cast<size_t>(i % w.prefix_groups)];
      std::copy_n(p.begin(), std::min(p.size(), r.prompt.size()), r.prompt.begin());
    }
    r.max_tokens = in_range(w.output_min, w.output_max);
    if (w.arrival == Arrival::poisson && i > 0) {
      // Exponential gaps from an integer uniform: -ln(u) * mean.
      const double u = (static_cast<double>(rng.below(1u << 30)) + 1.0) / static_cast<double>(1u << 30);
      t += static_cast<core::Time>(-std::log(u) * w.mean_gap_us * core::kUs);
    }
    r.arrival = t;
    r.seed = static_cast<int64_t>(rng.next() >> 1);
    r.spread = w.greedy_every > 0 && i % w.greedy_every == 0 ? 0 : spread_of(w.temperature);
    r.abort = w.abort_every > 0 && (i + 1) % w.abort_every == 0;
    if (w.priority_levels > 1)
      r.priority = static_cast<int>(priorities.below(static_cast<uint64_t>(w.priority_levels)));
    reqs.push_back(std::move(r));
  }
  return reqs;
}

std::vector<RequestSpec> make_replica_workload(const EngineConfig& cfg, int replica) {
  PPSPEC_ASSERT(replica >= 0 && replica < cfg.topology.dp, "replica {} of dp = {}", replica, cfg.topology.dp);
  std::vector<RequestSpec> mine;
  for (RequestSpec& r : make_workload(cfg))
    if (r.id % cfg.topology.dp == replica) mine.push_back(std::move(r));
  return mine;
}

}  // namespace ppspec::engine
