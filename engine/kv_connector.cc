#include "engine/kv_connector.h"

#include <algorithm>
#include <any>
#include <cstring>
#include <fmt/format.h>

#include "core/assert.h"
#include "engine/checkpoint.h"
#include "engine/kernel_launch.h"
#include "engine/probe.h"
#include "engine/span_of.h"
#include "kernels/kv_transfer.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

namespace {

core::KvSegmentFields fields_of(const KvSegment& s) {
  return {s.part, s.src_layer, s.dst_layer, s.lane_begin, s.lane_count};
}

}  // namespace

KvConnector::KvConnector(RankContext& ctx, KvCaches caches) : ctx_(ctx), caches_(std::move(caches)) {
  PPSPEC_ASSERT(ctx.cfg.instance() != Instance::aggregated);
  const int64_t slots = static_cast<int64_t>(ctx.max_blocks) * ctx.cfg.model.block_size;
  for (const KvRoute& r : kv_routes_of_rank(ctx.cfg, ctx.rank)) {
    Pair p{r, nullptr, {}};
    p.staging = ctx.alloc(core::Dtype::u32, slots * r.values_per_slot(), 1, "kv_transfer.staging");
    pairs_.push_back(std::move(p));
  }
  blocks_ = ctx.alloc(core::Dtype::i32, ctx.max_blocks, 1, "kv_transfer.blocks");
  stream_ = ctx.dev.stream("kv_transfer");
  main_done_ = ctx.dev.event("kv_transfer.after_main");
  copied_ = ctx.dev.event("kv_transfer.copied");
}

void KvConnector::run() {
  // The pairs' communicators, in the routes' order: one order on every rank, so that no two ranks
  // wait for each other's second communicator.
  for (Pair& p : pairs_) p.comm = &ctx_.rt.comm_init(p.route.comm, ctx_.rank);
  core::HostChannel& inbox = ctx_.rt.channel(kv_connector_channel(ctx_.rank));
  // Nothing moves before the worker serves: its stream may be capturing a graph until then, and an
  // event recorded on a capturing stream would be captured (vLLM starts loads from the worker's
  // execute_model, never during warmup). What arrives before waits, in order.
  std::vector<std::any> early;
  for (std::any m = inbox.recv(); std::any_cast<KvServing>(&m) == nullptr; m = inbox.recv()) {
    PPSPEC_ASSERT(std::any_cast<KvStop>(&m) == nullptr, "rank {}'s KV connector stopped before serving", ctx_.rank);
    early.push_back(std::move(m));
  }
  for (const std::any& m : early) serve(m);
  for (;;) {
    const std::any m = inbox.recv();
    if (std::any_cast<KvStop>(&m) != nullptr) return;
    serve(m);
  }
}

void KvConnector::serve(const std::any& m) {
  if (const auto* l = std::any_cast<KvLoad>(&m)) {
    load(*l);
    return;
  }
  const auto* p = std::any_cast<KvPull>(&m);
  PPSPEC_ASSERT(p != nullptr, "rank {}'s KV connector got a message it does not serve", ctx_.rank);
  send(*p);
}

KvConnector::Pair* KvConnector::pair_with(core::RankId peer) {
  for (Pair& p : pairs_)
    if (p.route.producer == peer || p.route.consumer == peer) return &p;
  return nullptr;
}

void KvConnector::upload_blocks(const std::vector<int32_t>& blocks) {
  PPSPEC_ASSERT(!blocks.empty() && static_cast<int64_t>(blocks.size()) <= ctx_.max_blocks,
                "a KV transfer of {} blocks (a table holds {})", blocks.size(), ctx_.max_blocks);
  std::vector<uint8_t> bytes(blocks.size() * sizeof(int32_t));
  std::memcpy(bytes.data(), blocks.data(), bytes.size());
  ctx_.dev.upload(stream_, blocks_.rows(0, static_cast<int64_t>(blocks.size())), std::move(bytes));
}

std::string KvConnector::engine_channel() const { return ctx_.outputs; }

const core::Buffer* KvConnector::cache_of(const KvSegment& s, bool as_producer, int32_t* width,
                                          int32_t* lane_offset) const {
  *width = 1;
  *lane_offset = 0;
  switch (s.part) {
    case KvPart::context: return caches_.context;
    case KvPart::draft: return caches_.draft;
    case KvPart::layer: break;
  }
  const int layer = as_producer ? s.src_layer : s.dst_layer;
  if (layer < 0 || static_cast<size_t>(layer) >= caches_.layers.size()) return nullptr;
  *width = ctx_.lane_count;
  *lane_offset = s.lane_begin - ctx_.lane_begin;
  if (*lane_offset < 0 || *lane_offset + s.lane_count > *width) return nullptr;
  return caches_.layers[static_cast<size_t>(layer)];
}

// The consumer's layer for each of a route's segments: the producer's (layers paired by name).
// Under stage_caches_paired_whole the producer stage's caches are paired with the rank's by
// position: the stage's i-th layer goes into the rank's i-th.
std::vector<KvSegment> KvConnector::segments_as_paired(const KvRoute& route) const {
  std::vector<KvSegment> out = route.segments;
  if (!ctx_.cfg.faults.stage_caches_paired_whole) return out;
  const EngineConfig prefill = prefill_instance_config(decode_instance_config(ctx_.cfg));
  const int producer_first =
      stage_layers(ctx_.cfg.model, prefill.topology.pp, prefill.topology.stage_of(route.producer)).first;
  const int own_first = stage_layers(ctx_.cfg.model, ctx_.pp, ctx_.stage).first;
  for (KvSegment& s : out)
    if (s.part == KvPart::layer) s.dst_layer = s.src_layer - producer_first + own_first;
  return out;
}

// The consumer: pull the request's KV over every route it takes part in, then report.
void KvConnector::load(const KvLoad& l) {
  // vLLM's pairing (NIXL _read_blocks): a producer that exported more blocks than the consumer
  // holds is read from the tail, remote[-len(local):] (the consumer's own prefix-cache hit covers
  // the head). Each local block i receives remote[i + skip].
  const size_t n = std::min(l.local.size(), l.remote.size());
  const size_t skip = l.remote.size() - n;
  const std::vector<int32_t> remote(l.remote.begin() + static_cast<std::ptrdiff_t>(skip), l.remote.end());
  const std::vector<int32_t> local(l.local.begin(), l.local.begin() + static_cast<std::ptrdiff_t>(n));
  // After every kernel the worker enqueued so far: the stores of the blocks' previous owner.
  ctx_.dev.record(main_done_, ctx_.main);
  ctx_.dev.stream_wait(stream_, main_done_);
  upload_blocks(local);
  for (const Pair& p : pairs_)
    if (p.route.consumer == ctx_.rank)
      ctx_.rt.channel(kv_connector_channel(p.route.producer)).send(KvPull{l.req, ctx_.rank, remote, p.route.segments});
  const int32_t bs = ctx_.cfg.model.block_size;
  const int64_t slots = static_cast<int64_t>(n) * bs;
  for (const Pair& p : pairs_) {
    if (p.route.consumer != ctx_.rank) continue;
    p.comm->recv(p.staging.rows(0, slots * p.route.values_per_slot()), 1, stream_, core::Label{"kv.pull", -1});
    int64_t offset = 0;
    for (const KvSegment& s : segments_as_paired(p.route)) {
      int32_t width = 0, lane_offset = 0;
      const int64_t count = slots * s.lane_count;
      // A segment this rank does not hold is dropped (the real connector fails on its descriptor).
      if (const core::Buffer* cache = cache_of(s, false, &width, &lane_offset))
        launch_kernel(ctx_.dev, stream_, core::KernelRef{"kv_inject", ""},
                      kn::KvInjectKernel{span_of<int32_t>(blocks_), bs, span_of<uint32_t>(p.staging).sub(offset, count),
                                         width, lane_offset, s.lane_count, span_of<uint32_t>(*cache)},
                      slots);
      offset += count;
    }
  }
  ctx_.dev.record(copied_, stream_);
  ctx_.dev.event_sync(copied_);
  if (ctx_.observed()) {
    std::vector<int64_t> pairs;
    for (size_t i = 0; i < n; ++i) pairs.insert(pairs.end(), {remote[i], local[i]});
    for (const Pair& p : pairs_)
      if (p.route.consumer == ctx_.rank)
        for (const KvSegment& s : segments_as_paired(p.route))
          publish(ctx_.rt, Probe{ctx_.rank, l.step, l.req}, core::KvPulledProbe{p.route.producer, fields_of(s), pairs});
  }
  ctx_.rt.channel(engine_channel()).send(KvDone{l.req, ctx_.rank});
}

// The producer: send the request's blocks of the segments the consumer asked for, then report.
void KvConnector::send(const KvPull& pull) {
  Pair* p = pair_with(pull.consumer);
  PPSPEC_ASSERT(p != nullptr, "rank {} was asked for KV by rank {}, with which it has no route", ctx_.rank,
                pull.consumer);
  // After the worker's kernels that stored the KV.
  ctx_.dev.record(main_done_, ctx_.main);
  ctx_.dev.stream_wait(stream_, main_done_);
  upload_blocks(pull.blocks);
  const int32_t bs = ctx_.cfg.model.block_size;
  const int64_t slots = static_cast<int64_t>(pull.blocks.size()) * bs;
  int64_t offset = 0;
  for (const KvSegment& s : pull.segments) {
    int32_t width = 0, lane_offset = 0;
    const int64_t count = slots * s.lane_count;
    if (const core::Buffer* cache = cache_of(s, true, &width, &lane_offset))
      launch_kernel(ctx_.dev, stream_, core::KernelRef{"kv_gather", ""},
                    kn::KvGatherKernel{span_of<int32_t>(blocks_), bs, span_of<uint32_t>(*cache), width, lane_offset,
                                       s.lane_count, span_of<uint32_t>(p->staging).sub(offset, count)},
                    slots);
    offset += count;
  }
  p->comm->send(p->staging.rows(0, offset), 0, stream_, core::Label{"kv.pull", -1});
  ctx_.dev.record(copied_, stream_);
  ctx_.dev.event_sync(copied_);
  if (ctx_.observed()) {
    const std::vector<int64_t> blocks(pull.blocks.begin(), pull.blocks.end());
    for (const KvSegment& s : pull.segments)
      publish(ctx_.rt, Probe{ctx_.rank, -1, pull.req}, core::KvSentProbe{pull.consumer, fields_of(s), blocks});
  }
  ctx_.rt.channel(engine_channel()).send(KvDone{pull.req, ctx_.rank});
}

}  // namespace ppspec::engine
