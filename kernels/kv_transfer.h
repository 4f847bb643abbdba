// The KV connector's copies between a rank's KV caches and a transfer's staging buffer
// (engine/kv_connector.h): the producer gathers a request's blocks of one cache (a layer's lanes,
// the context lane, the drafter's) into the staging buffer it sends; the consumer scatters what
// it received into its own blocks. One program per slot of the listed blocks, in block order.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

// staging[r, :] = cache[slot(r), lane_offset : lane_offset + lane_count].
struct KvGatherKernel {
  Span<const int32_t> blocks;  // [n] the request's blocks, in its order
  int32_t block_size;
  Span<const uint32_t> cache;  // [slots, width]
  int32_t width;               // the cache's lanes on this rank
  int32_t lane_offset;         // the segment's first lane within them
  int32_t lane_count;
  Span<uint32_t> staging;  // [n * block_size, lane_count]
  PPSPEC_HD void row(int64_t r) const {
    const int64_t slot = static_cast<int64_t>(blocks[r / block_size]) * block_size + r % block_size;
    const uint32_t* src = cache.read_range(slot * width + lane_offset, lane_count);
    uint32_t* dst = staging.write_range(r * lane_count, lane_count);
    for (int32_t j = 0; j < lane_count; ++j) dst[j] = src[j];
  }
};

// cache[slot(r), lane_offset : lane_offset + lane_count] = staging[r, :].
struct KvInjectKernel {
  Span<const int32_t> blocks;  // [n] the request's blocks on this instance, in its order
  int32_t block_size;
  Span<const uint32_t> staging;  // [n * block_size, lane_count]
  int32_t width;
  int32_t lane_offset;
  int32_t lane_count;
  Span<uint32_t> cache;  // [slots, width]
  PPSPEC_HD void row(int64_t r) const {
    const int64_t slot = static_cast<int64_t>(blocks[r / block_size]) * block_size + r % block_size;
    const uint32_t* src = staging.read_range(r * lane_count, lane_count);
    uint32_t* dst = cache.write_range(slot * width + lane_offset, lane_count);
    for (int32_t j = 0; j < lane_count; ++j) dst[j] = src[j];
  }
};

}  // namespace ppspec::kernels
