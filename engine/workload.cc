#include "engine/workload.h"

#include <cmath>

#include "core/rng.h"

namespace ppspec::engine {

uint32_t spread_of(double temperature) {
  if (temperature <= 0) return 0;
  return static_cast<uint32_t>(std::max(1L, std::lround(temperature * 32.0)));
}

std::vector<RequestSpec> make_workload(const EngineConfig& cfg) {
  const WorkloadConfig& w = cfg.workload;
  core::Rng rng(core::derive_seed(w.seed, 21));
  auto in_range = [&rng](int lo, int hi) { return lo + static_cast<int>(rng.below(static_cast<uint64_t>(hi - lo + 1))); };
  std::vector<RequestSpec> reqs;
  core::Time t = 0;
  for (int i = 0; i < w.num_requests; ++i) {
    RequestSpec r;
    r.id = i;
    const int len = in_range(w.prompt_min, w.prompt_max);
    for (int j = 0; j < len; ++j) {
      int32_t tok = static_cast<int32_t>(rng.below(static_cast<uint64_t>(cfg.model.vocab)));
      if (tok == cfg.model.stop_token) tok = (tok + 1) % cfg.model.vocab;
      r.prompt.push_back(tok);
    }
    r.max_tokens = in_range(w.output_min, w.output_max);
    if (w.arrival == Arrival::poisson && i > 0) {
      // Exponential gaps from an integer uniform: -ln(u) * mean.
      const double u = (static_cast<double>(rng.below(1u << 30)) + 1.0) / static_cast<double>(1u << 30);
      t += static_cast<core::Time>(-std::log(u) * w.mean_gap_us * core::kUs);
    }
    r.arrival = t;
    r.seed = static_cast<int64_t>(rng.next() >> 1);
    r.spread = spread_of(w.temperature);
    r.abort = w.abort_every > 0 && (i + 1) % w.abort_every == 0;
    reqs.push_back(std::move(r));
  }
  return reqs;
}

}  // namespace ppspec::engine
