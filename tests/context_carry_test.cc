// The context sums of a kernel's rows carried from one row to the next of the same request
// (kernels/toy_model.h, ContextCarry): the same sums, bit for bit, as every row computed from
// scratch (as a GPU thread computes its row), whatever the layout of requests, positions, null
// blocks and lanes; the same accesses told to the race detector, repeats aside; and no carry when
// the kernel's writes could change what its next row reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::testing {
namespace {

namespace kn = kernels;

constexpr int32_t kBlockSize = 4;
constexpr int32_t kMaxBlocks = 6;
constexpr int32_t kRequests = 3;
constexpr int32_t kSlots = 32 * kBlockSize;

// A batch of rows over kRequests requests: runs of consecutive positions (decode rows, prefill
// chunks), padding rows, a request that comes back later or starts lower, null blocks.
struct Batch {
  std::vector<int32_t> input_ids, row_req, block_table;
  std::vector<int64_t> positions, slots;
  kn::RowInputs inputs() {
    return kn::RowInputs{kn::Span<const int32_t>(input_ids.data(), static_cast<int64_t>(input_ids.size())),
                         kn::Span<const int64_t>(positions.data(), static_cast<int64_t>(positions.size())),
                         kn::Span<const int64_t>(slots.data(), static_cast<int64_t>(slots.size())),
                         kn::Span<const int32_t>(row_req.data(), static_cast<int64_t>(row_req.size())),
                         kn::Span<const int32_t>(block_table.data(), static_cast<int64_t>(block_table.size())),
                         kMaxBlocks,
                         kBlockSize};
  }
  int64_t rows() const { return static_cast<int64_t>(row_req.size()); }
};

Batch make_batch(std::mt19937& rng) {
  Batch b;
  b.block_table.assign(kRequests * kMaxBlocks, 0);
  for (int32_t& block : b.block_table) block = static_cast<int32_t>(rng() % 32);  // 0: the null block
  const int runs = 2 + static_cast<int>(rng() % 6);
  for (int r = 0; r < runs; ++r) {
    const int32_t req = rng() % 5 == 0 ? -1 : static_cast<int32_t>(rng() % kRequests);
    const int64_t start = static_cast<int64_t>(rng() % (kMaxBlocks * kBlockSize - 1));
    const int64_t length = 1 + static_cast<int64_t>(rng() % 9);
    for (int64_t p = start; p < start + length && p < kMaxBlocks * kBlockSize + 2; ++p) {
      b.row_req.push_back(req);
      b.positions.push_back(p);
      b.input_ids.push_back(0);
      b.slots.push_back(kn::kPadSlot);
    }
  }
  return b;
}

std::vector<uint32_t> random_words(std::mt19937& rng, size_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t& w : v) w = static_cast<uint32_t>(rng());
  return v;
}

// LayerOut over `b` with `lanes` lanes, all of them this rank's.
kn::LayerOutKernel layer_out(Batch& b, const std::vector<uint32_t>& y, const std::vector<uint32_t>& kv,
                             std::vector<uint32_t>& x, int32_t lanes) {
  return kn::LayerOutKernel{b.inputs(),
                            kn::Span<const uint32_t>(y.data(), static_cast<int64_t>(y.size())),
                            kn::Span<const uint32_t>(kv.data(), static_cast<int64_t>(kv.size())),
                            lanes,
                            0,
                            lanes,
                            kn::Span<uint32_t>(x.data(), static_cast<int64_t>(x.size()))};
}

// Runs `k` over every row, once as one execution (the carry at work) and once row by row on a
// fresh copy (no carry); the outputs `out` must match.
template <typename K>
void expect_carry_changes_nothing(const K& k, int64_t rows, std::vector<uint32_t>& out, int seed) {
  const std::vector<uint32_t> before = out;
  const K one = k;
  for (int64_t i = 0; i < rows; ++i) one.row(i);
  const std::vector<uint32_t> carried = out;
  out = before;
  for (int64_t i = 0; i < rows; ++i) {
    const K fresh = k;
    fresh.row(i);
  }
  EXPECT_EQ(carried, out) << "seed " << seed;
}

TEST(ContextCarry, LayerOutSumsAreThoseOfEveryRowFromScratch) {
  for (const int32_t lanes : {1, 2, 3, 4, 8, 16, 20, 32}) {
    for (int seed = 0; seed < 40; ++seed) {
      std::mt19937 rng(static_cast<uint32_t>(seed * 131 + lanes));
      Batch b = make_batch(rng);
      const std::vector<uint32_t> y = random_words(rng, static_cast<size_t>(b.rows() * lanes));
      const std::vector<uint32_t> kv = random_words(rng, static_cast<size_t>(kSlots * lanes));
      std::vector<uint32_t> x(static_cast<size_t>(b.rows() * lanes));
      expect_carry_changes_nothing(layer_out(b, y, kv, x, lanes), b.rows(), x, seed);
    }
  }
}

TEST(ContextCarry, ContextSumsAreThoseOfEveryRowFromScratch) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    Batch b = make_batch(rng);
    const std::vector<uint32_t> ctx_kv = random_words(rng, kSlots);
    std::vector<uint32_t> c(static_cast<size_t>(b.rows()));
    const kn::ContextSumKernel k{b.inputs(), kn::Span<const uint32_t>(ctx_kv.data(), kSlots),
                                 kn::Span<uint32_t>(c.data(), static_cast<int64_t>(c.size()))};
    expect_carry_changes_nothing(k, b.rows(), c, seed);
  }
}

// The sums equal position-by-position sums through slot_of (the definition), not only each other.
TEST(ContextCarry, ACarriedSumIsThePositionByPositionSum) {
  std::mt19937 rng(7);
  Batch b;
  b.block_table = {3, 0, 5, 9, 2, 11};  // one request; its second block is the null block
  for (int64_t p = 0; p < kMaxBlocks * kBlockSize; ++p) {
    b.row_req.push_back(0);
    b.positions.push_back(p);
    b.input_ids.push_back(0);
    b.slots.push_back(kn::kPadSlot);
  }
  const std::vector<uint32_t> ctx_kv = random_words(rng, kSlots);
  std::vector<uint32_t> c(static_cast<size_t>(b.rows()));
  const kn::ContextSumKernel k{b.inputs(), kn::Span<const uint32_t>(ctx_kv.data(), kSlots),
                               kn::Span<uint32_t>(c.data(), static_cast<int64_t>(c.size()))};
  for (int64_t i = 0; i < b.rows(); ++i) k.row(i);
  const kn::Span<const int32_t> blocks(b.block_table.data(), kMaxBlocks);
  uint32_t expected = 0;
  for (int64_t p = 0; p < b.rows(); ++p) {
    const int64_t slot = kn::slot_of(blocks, kMaxBlocks, kBlockSize, p);
    if (slot != kn::kPadSlot) expected += ctx_kv[static_cast<size_t>(slot)];
    EXPECT_EQ(c[static_cast<size_t>(p)], expected) << "position " << p;
  }
}

// Records the bytes it is told of, by mode; answers each access with exactly its bytes.
class ToldBytes final : public kn::AccessObserver {
 public:
  ToldBytes() {
    kn::t_access_observer = this;
    kn::t_access_runs = runs_.data();
    ++kn::t_access_item;
  }
  ~ToldBytes() override {
    kn::t_access_observer = nullptr;
    kn::t_access_runs = nullptr;
  }
  kn::CheckedBytes on_access(const void* first, size_t bytes, bool write) override {
    const auto* b = static_cast<const unsigned char*>(first);
    for (size_t i = 0; i < bytes; ++i) told.insert({b + i, write});
    return {b, b + bytes, 0};
  }
  std::set<std::pair<const unsigned char*, bool>> told;

 private:
  std::vector<kn::AccessRun> runs_ = std::vector<kn::AccessRun>(1);
};

// What the race detector is told: every byte a from-scratch execution tells, in the same mode, and
// nothing else (the carry leaves out only repeats within the item, never a byte not told before).
TEST(ContextCarry, TheRaceDetectorIsToldTheSameAccessesRepeatsAside) {
  for (int seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(static_cast<uint32_t>(1000 + seed));
    Batch b = make_batch(rng);
    constexpr int32_t kLanes = 4;
    const std::vector<uint32_t> y = random_words(rng, static_cast<size_t>(b.rows() * kLanes));
    const std::vector<uint32_t> kv = random_words(rng, static_cast<size_t>(kSlots * kLanes));
    std::vector<uint32_t> x(static_cast<size_t>(b.rows() * kLanes));
    const kn::LayerOutKernel k = layer_out(b, y, kv, x, kLanes);
    std::set<std::pair<const unsigned char*, bool>> carried, scratch;
    {
      ToldBytes obs;
      const kn::LayerOutKernel one = k;
      for (int64_t i = 0; i < b.rows(); ++i) one.row(i);
      carried = obs.told;
    }
    {
      ToldBytes obs;  // one item, as above
      for (int64_t i = 0; i < b.rows(); ++i) {
        const kn::LayerOutKernel fresh = k;
        fresh.row(i);
      }
      scratch = obs.told;
    }
    EXPECT_EQ(carried, scratch) << "seed " << seed;
  }
}

// A kernel whose output overlaps what it sums (a wrong buffer passed): the next row reads what the
// previous wrote, so nothing is carried, and the rows see memory as row-by-row execution leaves it.
TEST(ContextCarry, NothingIsCarriedWhenTheOutputOverlapsTheContext) {
  Batch b;
  b.block_table.assign(kRequests * kMaxBlocks, 0);
  b.block_table[0] = 1;  // request 0: slots 4..7, then 8..11
  b.block_table[1] = 2;
  for (int64_t p = 0; p < 8; ++p) {
    b.row_req.push_back(0);
    b.positions.push_back(p);
    b.input_ids.push_back(0);
    b.slots.push_back(kn::kPadSlot);
  }
  std::mt19937 rng(3);
  std::vector<uint32_t> memory = random_words(rng, kSlots);
  // c[i] is ctx_kv slot 4 + i: row 0 writes the first slot every later row sums.
  const kn::ContextSumKernel k{b.inputs(), kn::Span<const uint32_t>(memory.data(), kSlots),
                               kn::Span<uint32_t>(memory.data() + kBlockSize, b.rows())};
  expect_carry_changes_nothing(k, b.rows(), memory, 0);
}

}  // namespace
}  // namespace ppspec::testing
