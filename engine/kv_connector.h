// A rank's side of a disaggregated KV transfer (engine/disaggregation.h): an actor of its own
// beside the worker, on the same device (vLLM's NIXL agent thread, the P2P NCCL connector's
// listener), serving its connector channel until its engine core stops it.
//  * On a decode rank: a load asks it to pull a request's KV. For each of its routes it asks the
//    producer to send, receives the segments into a staging buffer on its own stream, and scatters
//    them into the request's blocks; once every copy completed it reports to its engine core.
//  * On a prefill rank: a pull asks it to send. It orders its stream after the worker's (the KV
//    was computed there), gathers the request's blocks of each segment, sends them, and reports to
//    its engine core once the send completed (then the prefill instance may free the blocks).
#pragma once

#include <any>
#include <cstdint>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "engine/disaggregation.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

// The caches a rank's connector copies through (null: not on this rank).
struct KvCaches {
  const core::Buffer* context = nullptr;
  std::vector<const core::Buffer*> layers;  // by global layer
  const core::Buffer* draft = nullptr;
};

class KvConnector {
 public:
  // Allocates its staging buffers: before the worker's actor starts (they are poisoned with the rest).
  KvConnector(RankContext& ctx, KvCaches caches);
  // The actor's body.
  void run();
  core::RankId rank() const { return ctx_.rank; }

 private:
  struct Pair {
    KvRoute route;
    core::Communicator* comm = nullptr;
    core::Buffer staging;  // [max blocks * block size * values per slot]
  };
  void serve(const std::any& m);
  void load(const KvLoad& l);
  void send(const KvPull& p);
  // The segment's cache on this rank, and its lanes' offset in it; null where the rank does not
  // hold it (a segment asked of the wrong stage).
  const core::Buffer* cache_of(const KvSegment& s, bool as_producer, int32_t* width, int32_t* lane_offset) const;
  Pair* pair_with(core::RankId peer);
  std::vector<KvSegment> segments_as_paired(const KvRoute& route) const;
  void upload_blocks(const std::vector<int32_t>& blocks);
  std::string engine_channel() const;

  RankContext& ctx_;
  KvCaches caches_;
  std::vector<Pair> pairs_;
  core::Stream stream_;
  core::Buffer blocks_;  // [max blocks] the request's blocks on this rank, for the kernels
  core::DeviceEvent main_done_, copied_;
};

}  // namespace ppspec::engine
