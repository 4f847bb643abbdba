// sim/item_ring.h, the race detector's memory of each stream's last items, against the plainest
// model (the last record written to each slot), for ticks that come one by one and ticks that skip
// (a host thread's accesses), across the ring's wrap.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "sim/item_ring.h"

namespace ppspec::testing {
namespace {

struct Record {
  uint32_t tick = 0;
  uint64_t payload = 0;
};

constexpr size_t kCapacity = 256;
constexpr size_t kChunk = 16;
using Ring = sim::ItemRing<Record, kCapacity, kChunk>;

void expect_like_model(const Ring& ring, const std::map<size_t, Record>& model, uint32_t last) {
  for (uint32_t t = 1; t <= last + kCapacity; ++t) {
    const Record* got = ring.find(t);
    const auto slot = model.find(t % kCapacity);
    const bool kept = slot != model.end() && slot->second.tick == t;
    ASSERT_EQ(got != nullptr, kept) << "tick " << t << " after tick " << last;
    if (kept) {
      EXPECT_EQ(got->payload, slot->second.payload) << "tick " << t;
    }
  }
}

TEST(ItemRing, RemembersTheLastRecordOfEachSlotAndForgetsOlderTicks) {
  for (const uint32_t most_skip : {1U, 3U, 40U}) {
    std::mt19937 rng(most_skip);
    Ring ring;
    std::map<size_t, Record> model;
    uint32_t tick = 0;
    for (int i = 0; i < 2000; ++i) {
      tick += 1 + static_cast<uint32_t>(rng() % most_skip);
      const Record r{tick, rng()};
      ring.slot(tick) = r;
      model[tick % kCapacity] = r;
      if (i % 97 == 0) expect_like_model(ring, model, tick);
    }
    expect_like_model(ring, model, tick);
  }
}

TEST(ItemRing, GrowsAChunkAtATimeUpToItsCapacity) {
  Ring ring;
  EXPECT_EQ(ring.chunks(), 0U);
  EXPECT_EQ(ring.find(1), nullptr);  // nothing written: no chunk to look in
  for (uint32_t t = 1; t <= 3 * kCapacity; ++t) {
    ring.slot(t) = Record{t, t};
    const size_t expected = t < kCapacity ? t / kChunk + 1 : kCapacity / kChunk;
    ASSERT_EQ(ring.chunks(), expected) << "tick " << t;
  }
  // A chunk's records that were never written read as tick 0, which no item has.
  Ring fresh;
  fresh.slot(kChunk + 1) = Record{kChunk + 1, 7};
  EXPECT_EQ(fresh.find(1), nullptr);
  EXPECT_EQ(fresh.find(kChunk), nullptr);
  ASSERT_NE(fresh.find(kChunk + 1), nullptr);
  EXPECT_EQ(fresh.find(kChunk + 1)->payload, 7U);
}

}  // namespace
}  // namespace ppspec::testing
