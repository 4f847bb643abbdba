#include "engine/disaggregation.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"
#include "engine/checkpoint.h"

namespace ppspec::engine {

EngineConfig prefill_instance_config(const EngineConfig& decode) {
  PPSPEC_ASSERT(decode.instance() == Instance::decode, "a prefill instance of a {} configuration",
                decode.disagg.enabled ? "prefill" : "non-disaggregated");
  EngineConfig p = decode;
  p.topology = decode.disagg.prefill;
  p.topology.dp = 1;
  p.topology.first_rank = decode.topology.ranks();
  // Async scheduling's lookahead batch is the deployment's: pp + 1 batches of the prefill's own pp.
  p.serving.max_concurrent_batches = decode.schedules_ahead() ? p.topology.pp + 1 : 0;
  p.disagg.prefill_side = true;
  p.disagg.decode = decode.topology;
  p.disagg.prefill.first_rank = p.topology.first_rank;
  return p;
}

EngineConfig decode_instance_config(const EngineConfig& either) {
  PPSPEC_ASSERT(either.instance() != Instance::aggregated, "a decode instance of an aggregated configuration");
  if (either.instance() == Instance::decode) return either;
  EngineConfig d = either;
  d.topology = either.disagg.decode;
  d.disagg.prefill_side = false;
  d.disagg.decode = {};
  return d;
}

std::vector<KvRoute> kv_routes_of_rank(const EngineConfig& either, core::RankId rank) {
  std::vector<KvRoute> out;
  for (KvRoute& r : kv_routes(decode_instance_config(either)))
    if (r.producer == rank || r.consumer == rank) out.push_back(std::move(r));
  return out;
}

std::vector<RequestSpec> prefill_workload(std::vector<RequestSpec> workload) {
  for (RequestSpec& r : workload) {
    r.max_tokens = 1;
    r.abort = false;
  }
  return workload;
}

int64_t KvRoute::values_per_slot() const {
  int64_t n = 0;
  for (const KvSegment& s : segments) n += s.lane_count;
  return n;
}

int kv_blocks_of_prompt(int prompt_tokens, int block_size) { return (prompt_tokens + block_size - 1) / block_size; }

namespace {

struct Shard {
  LayerRange layers;
  int lane_begin = 0;
  int lane_count = 0;
  bool first = false;
  bool last = false;
};

Shard shard_of(const ModelConfig& m, const Topology& t, core::RankId r) {
  Shard s;
  const int stage = t.stage_of(r);
  s.layers = stage_layers(m, t.pp, stage);
  s.lane_count = m.lanes / t.tp;
  s.lane_begin = t.tp_rank_of(r) * s.lane_count;
  s.first = stage == 0;
  s.last = stage == t.pp - 1;
  return s;
}

// The segments producer `p` sends consumer `c`: each layer both hold, over the lanes both hold;
// the unsharded context and drafter caches from the producer whose lanes begin the consumer's.
std::vector<KvSegment> segments_between(const EngineConfig& cfg, const Shard& p, const Shard& c) {
  std::vector<KvSegment> out;
  const int lo = std::max(p.lane_begin, c.lane_begin);
  const int hi = std::min(p.lane_begin + p.lane_count, c.lane_begin + c.lane_count);
  const bool owns_first_lane = c.lane_begin >= p.lane_begin && c.lane_begin < p.lane_begin + p.lane_count;
  if (p.first && c.first && owns_first_lane) out.push_back({KvPart::context, -1, -1, 0, 1});
  if (hi > lo)
    for (int l = std::max(p.layers.first, c.layers.first); l < std::min(p.layers.last, c.layers.last); ++l)
      if (!cfg.model.is_recurrent(l)) out.push_back({KvPart::layer, l, l, lo, hi - lo});
  if (cfg.spec.k > 0 && p.last && c.last && owns_first_lane) out.push_back({KvPart::draft, -1, -1, 0, 1});
  return out;
}

// connect_all_stages: the segments a consumer asks of a producer stage that holds none of its
// layers (over the lanes both hold): its own layers, as if the stage held the whole model.
std::vector<KvSegment> segments_asked_of_any_stage(const EngineConfig& cfg, const Shard& p, const Shard& c) {
  Shard whole = p;
  whole.layers = {0, cfg.model.layers};
  std::vector<KvSegment> out;
  for (const KvSegment& s : segments_between(cfg, whole, c))
    if (s.part == KvPart::layer) out.push_back(s);
  return out;
}

}  // namespace

std::vector<KvRoute> kv_routes(const EngineConfig& decode) {
  PPSPEC_ASSERT(decode.instance() == Instance::decode);
  const EngineConfig prefill = prefill_instance_config(decode);
  std::vector<KvRoute> out;
  for (core::RankId c = 0; c < decode.topology.ranks(); ++c) {
    const Shard cs = shard_of(decode.model, decode.topology, c);
    for (int i = 0; i < prefill.topology.ranks(); ++i) {
      const core::RankId p = prefill.topology.first_rank + i;
      const Shard ps = shard_of(decode.model, prefill.topology, p);
      KvRoute r{p, c, fmt::format("kv.prefill{}.decode{}", p, c), {}};
      r.segments = segments_between(decode, ps, cs);
      if (r.segments.empty() && decode.faults.connect_all_stages)
        r.segments = segments_asked_of_any_stage(decode, ps, cs);
      if (!r.segments.empty()) out.push_back(std::move(r));
    }
  }
  return out;
}

std::string kv_connector_channel(core::RankId rank) { return fmt::format("kv{}", rank); }

}  // namespace ppspec::engine
