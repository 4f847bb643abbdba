// The last `kCapacity` records of one actor's work items, by tick (the race detector's memory of
// what each stream ran, for its reports). Grown a chunk at a time as the items come: most streams
// of a short run (a fuzz case, a property test) run a few dozen items, and a whole ring per stream
// cost more than the run. Chunks never move once made: a vector grown record by record copied
// every record at each doubling and touched fresh pages twice over (page faults were most of what
// race detection added to a short serving run's system time).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/assert.h"

namespace ppspec::sim {

template <typename Record, size_t kCapacity, size_t kChunk>
class ItemRing {
  static_assert(kCapacity % kChunk == 0, "a ring holds whole chunks");

 public:
  // The record for `tick`, which takes the slot of tick - kCapacity: written in full by the caller,
  // its `tick` included.
  Record& slot(uint32_t tick) {
    const size_t at = tick % kCapacity;
    const size_t chunk = at / kChunk;
    while (chunks_.size() <= chunk) {  // checked only as it grows: every item takes a slot
      PPSPEC_ASSERT(chunks_.size() < kCapacity / kChunk, "an item ring grew past its {} chunks", kCapacity / kChunk);
      chunks_.push_back(std::make_unique<Chunk>());
    }
    return (*chunks_[chunk])[at % kChunk];
  }
  // The record written for `tick` (Record::tick says which it holds), or null when its slot was
  // never written or holds a later tick.
  const Record* find(uint32_t tick) const {
    const size_t at = tick % kCapacity;
    const size_t chunk = at / kChunk;
    if (chunk >= chunks_.size()) return nullptr;
    const Record& r = (*chunks_[chunk])[at % kChunk];
    return r.tick == tick ? &r : nullptr;
  }
  size_t chunks() const { return chunks_.size(); }

 private:
  using Chunk = std::array<Record, kChunk>;
  std::vector<std::unique_ptr<Chunk>> chunks_;  // at most kCapacity / kChunk
};

}  // namespace ppspec::sim
