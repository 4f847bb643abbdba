// Prefill/decode disaggregation, as vLLM's NIXL connector does it (pull; docs/serving.md): a
// prefill instance of its own pp x tp computes each prompt, samples its first token (the proxy
// discards it) and keeps the prompt's KV blocks; the decode instance allocates blocks for the
// prompt, pulls the prompt's KV from every producer rank whose layers and lanes overlap its own
// ranks' (per (producer stage, tp rank) -> (consumer stage, tp rank) route, by layer band and lane
// range), and admits the request once every one of its ranks reported its pulls complete; then it
// recomputes the prompt's last token (its logits, and EAGLE's hidden state) and serves the rest.
// The prefill instance frees a request's blocks once every route's send of them completed.
//
// What travels: per route, the request's blocks of each segment (a target layer's overlapping
// lanes, the context lane on the first stages, the drafter's KV on the last stages), staged in
// one buffer, over an NCCL communicator of the pair's own (the P2P NCCL connector's transport;
// NIXL's one-sided reads are modelled as a send the producer posts on the consumer's request).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/event_subjects.h"
#include "core/types.h"
#include "engine/config.h"
#include "engine/workload.h"

namespace ppspec::engine {

// The prefill instance's configuration: the decode instance's (the scenario's), on the prefill
// topology, its ranks after the decode instance's.
EngineConfig prefill_instance_config(const EngineConfig& decode);

// The prefill instance's requests: the workload's, each asked for one token (vLLM's proxy sends the
// prefill max_tokens = 1 and discards the token), none aborted there.
std::vector<RequestSpec> prefill_workload(std::vector<RequestSpec> workload);

// The decode instance's configuration, from either instance's.
EngineConfig decode_instance_config(const EngineConfig& either);

using core::KvPart;

struct KvSegment {
  KvPart part = KvPart::layer;
  int src_layer = -1;  // the producer's layer (a layer segment; -1 otherwise)
  int dst_layer = -1;  // the consumer's layer it goes into
  int lane_begin = 0;  // global lanes [lane_begin, lane_begin + lane_count)
  int lane_count = 1;
  friend bool operator==(const KvSegment&, const KvSegment&) = default;
};

// One producer rank -> consumer rank pair that exchanges KV, and what it carries.
struct KvRoute {
  core::RankId producer = -1;
  core::RankId consumer = -1;
  std::string comm;  // the pair's communicator: the consumer is its rank 0, the producer its rank 1
  std::vector<KvSegment> segments;
  int64_t values_per_slot() const;  // lanes summed over the segments
};

// Every route of a disaggregated configuration (the decode instance's), by consumer rank, then
// producer rank: the order every rank initialises the pairs' communicators in.
std::vector<KvRoute> kv_routes(const EngineConfig& decode);

// The routes `rank` (of either instance) takes part in, in that order.
std::vector<KvRoute> kv_routes_of_rank(const EngineConfig& either, core::RankId rank);

// The prompt blocks a transfer carries: those holding its computed tokens.
int kv_blocks_of_prompt(int prompt_tokens, int block_size);

// ---- what the instances and their connectors say to each other over host channels ----

// Prefill engine core -> decode engine core: a request's prompt is computed; its KV is in `blocks`.
struct KvExport {
  int64_t req = -1;
  std::vector<int32_t> blocks;
};
// Decode engine core -> each decode rank's connector: pull the request's KV into `local`.
struct KvLoad {
  int64_t req = -1;
  int64_t step = -1;  // the decode instance's step whose schedule allocated the blocks and started the pull
  std::vector<int32_t> local;
  std::vector<int32_t> remote;  // as the prefill instance exported them
};
// Consumer connector -> producer connector: send the request's `blocks` of these segments.
struct KvPull {
  int64_t req = -1;
  core::RankId consumer = -1;
  std::vector<int32_t> blocks;
  std::vector<KvSegment> segments;
};
// A connector -> its engine core: its transfers of the request completed.
struct KvDone {
  int64_t req = -1;
  core::RankId rank = -1;
};
// A worker -> its connector: warmup is over (its graphs are captured); transfers may start.
struct KvServing {};
// An engine core -> its connectors: serving ended.
struct KvStop {};

// The channel a rank's connector serves.
std::string kv_connector_channel(core::RankId rank);

}  // namespace ppspec::engine
