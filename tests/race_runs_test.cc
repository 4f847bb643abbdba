// What a Span tells the race detector, and what it may leave untold (kernels/span.h,
// kernels/access.h): an element inside its memo, or the next one after the run its memo ends
// with, in the same mode, within the run's allocation, during the same item. The first tests
// check that protocol against a fake observer; the rest check, both ways, that a race whose
// access was never told (a run's element the Span added itself, a run put aside mid-item, a view
// kept across items) is still found.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/span.h"
#include "tests/harness.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

// Records the accesses it is told and answers each with a run of exactly those bytes.
class FakeObserver final : public kernels::AccessObserver {
 public:
  struct Told {
    const void* first;
    size_t bytes;
    bool write;
  };
  explicit FakeObserver(const unsigned char* limit) : limit_(limit) {
    kernels::t_access_observer = this;
    kernels::t_access_runs = runs_.data();
    ++kernels::t_access_item;
  }
  ~FakeObserver() override {
    kernels::t_access_observer = nullptr;
    kernels::t_access_runs = nullptr;
  }
  kernels::CheckedBytes on_access(const void* first, size_t bytes, bool write) override {
    told.push_back({first, bytes, write});
    const auto* b = static_cast<const unsigned char*>(first);
    runs_[0] = kernels::AccessRun{b, b + bytes, limit_, write};
    return {b, b + bytes, 1};
  }
  const kernels::AccessRun& run() const { return runs_[0]; }
  std::vector<Told> told;

 private:
  const unsigned char* limit_;
  std::array<kernels::AccessRun, 1> runs_{};
};

const unsigned char* bytes_at(const void* p) { return static_cast<const unsigned char*>(p); }

TEST(SpanRuns, AViewExtendsItsRunElementByElementWithoutTellingAndStopsAtTheAllocationsEnd) {
  std::array<int32_t, 8> buffer{};
  FakeObserver obs(bytes_at(buffer.data() + 6));  // the "allocation" ends before element 6
  const kernels::Span<int32_t> s(buffer.data(), 8);
  s[2] = 1;
  ASSERT_EQ(obs.told.size(), 1u);
  s[3] = 1;
  s[4] = 1;
  s[3] = 2;  // inside the memo
  s[5] = 1;
  EXPECT_EQ(obs.told.size(), 1u) << "elements 3..5 extend the run";
  EXPECT_EQ(obs.run().end, bytes_at(buffer.data() + 6));
  s[6] = 1;  // past the run's limit: told
  ASSERT_EQ(obs.told.size(), 2u);
  EXPECT_EQ(obs.told[1].first, buffer.data() + 6);
  s[1] = 1;  // before the memo: told
  EXPECT_EQ(obs.told.size(), 3u);
}

TEST(SpanRuns, AReadThroughAWriteViewIsToldButNeverExtendsOrFillsItsMemo) {
  std::array<uint32_t, 8> buffer{};
  FakeObserver obs(bytes_at(buffer.data() + 8));
  const kernels::Span<uint32_t> s(buffer.data(), 8);
  (void)s.read_range(0, 2);  // a read of a write view: told, not remembered as a write
  ASSERT_EQ(obs.told.size(), 1u);
  EXPECT_FALSE(obs.told[0].write);
  s[0] = 1;  // the write is told, though the read covered the element
  ASSERT_EQ(obs.told.size(), 2u);
  EXPECT_TRUE(obs.told[1].write);
  // A read view may not extend a write run: its next read is told.
  const kernels::Span<const uint32_t> r(s);
  (void)r[1];
  ASSERT_EQ(obs.told.size(), 3u);
  EXPECT_FALSE(obs.told[2].write);
}

TEST(SpanRuns, AWriteRangeIsToldOnceAsOneWriteAndItsElementsAreRemembered) {
  std::array<uint8_t, 16> buffer{};
  FakeObserver obs(bytes_at(buffer.data() + 16));
  const kernels::Span<uint8_t> s(buffer.data(), 16);
  uint8_t* p = s.write_range(4, 8);
  EXPECT_EQ(p, buffer.data() + 4);
  ASSERT_EQ(obs.told.size(), 1u);
  EXPECT_EQ(obs.told[0].first, buffer.data() + 4);
  EXPECT_EQ(obs.told[0].bytes, 8u);
  EXPECT_TRUE(obs.told[0].write);
  s[4] = 1;
  s[11] = 1;
  (void)s.write_range(5, 3);
  EXPECT_EQ(obs.told.size(), 1u) << "inside what the range told";
  s[12] = 1;  // right after the run: the view extends it without telling
  EXPECT_EQ(obs.told.size(), 1u);
  s[2] = 1;  // before it: told
  EXPECT_EQ(obs.told.size(), 2u);
  (void)s.write_range(0, 0);  // nothing: nothing told
  EXPECT_EQ(obs.told.size(), 2u);
}

TEST(SpanRuns, WhatAViewRemembersIsForgottenWhenTheNextItemBegins) {
  std::array<int64_t, 4> buffer{};
  const kernels::Span<const int64_t> s(buffer.data(), 4);
  {
    FakeObserver first(bytes_at(buffer.data() + 4));
    (void)s[0];
    (void)s[1];
    EXPECT_EQ(first.told.size(), 1u);
  }
  FakeObserver second(bytes_at(buffer.data() + 4));
  (void)s[0];
  (void)s[1];
  ASSERT_EQ(second.told.size(), 1u) << "the same view, another item: told again";
  EXPECT_EQ(second.told[0].first, buffer.data());
}

TEST(SpanRuns, ASliceCarriesItsParentsMemoAndRun) {
  std::array<int32_t, 8> buffer{};
  FakeObserver obs(bytes_at(buffer.data() + 8));
  const kernels::Span<const int32_t> s(buffer.data(), 8);
  (void)s[0];
  const kernels::Span<const int32_t> row = s.sub(1, 3);  // starts where the run ends
  (void)row[0];
  (void)row[1];
  EXPECT_EQ(obs.told.size(), 1u);
  EXPECT_EQ(obs.run().end, bytes_at(buffer.data() + 3));
}

sim::SimConfig race_config() {
  auto cfg = exact_config();
  cfg.detect_races = true;
  cfg.module_loading = core::ModuleLoading::eager;  // as in race_detector_test.cc
  return cfg;
}

void launch(Harness& h, core::Stream s, const char* name, std::function<void()> body) {
  core::KernelLaunch l;
  l.kernel = core::KernelRef{name, ""};
  l.work = 1;
  l.body = std::move(body);
  h.rt.device(0).launch(s, l);
}

// On rank 0 of `h`: `writer` on stream main, then `reader` on side, after an event that orders
// them or not.
core::RunResult writer_then_reader(Harness& h, bool ordered, std::function<void()> writer,
                                   std::function<void()> reader) {
  h.actor(0, [&] {
    auto& d = h.rt.device(0);
    const core::Stream main = d.stream("main"), side = d.stream("side");
    launch(h, main, "writer", std::move(writer));
    if (ordered) {
      const core::DeviceEvent e = d.event("written");
      d.record(e, main);
      d.stream_wait(side, e);
    }
    launch(h, side, "reader", std::move(reader));
    d.device_sync();
  });
  return h.run();
}

// What the first finding's two sites did ("writer writes test row 6").
std::set<std::string> race_sites(const core::RunResult& r) {
  return {r.findings.front().sites[0].what, r.findings.front().sites[1].what};
}

std::set<std::string> row_race(int64_t row) {
  return {fmt::format("writer writes test row {}", row), fmt::format("reader reads test row {}", row)};
}

// `writer` writes buffers[0..n) whole, element by element (all but each buffer's first element
// extend runs without a call, and past 16 buffers runs are put aside mid-item); `reader` then
// reads element `row` of buffer `which`.
core::RunResult write_many_then_read(int buffers, int which, int64_t row, bool ordered, uint64_t seed) {
  Harness h(1, race_config(), seed);
  std::vector<core::Buffer> bs;
  for (int i = 0; i < buffers; ++i) bs.push_back(h.buffer(0, 8, core::Dtype::i64));
  const core::Buffer target = bs[static_cast<size_t>(which)];
  return writer_then_reader(
      h, ordered,
      [bs] {
        for (const core::Buffer& b : bs) {
          const kernels::Span<int64_t> s(static_cast<int64_t*>(b.data()), b.count());
          for (int64_t i = 0; i < s.size; ++i) s[i] = i;
        }
      },
      [target, row] {
        (void)kernels::Span<const int64_t>(static_cast<const int64_t*>(target.data()), target.count())[row];
      });
}

TEST(SpanRuns, AnElementOnlyARunReachedRacesAndIsNamed) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto r = write_many_then_read(1, 0, 6, false, seed);
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    EXPECT_EQ(race_sites(r), row_race(6));
    EXPECT_EQ(write_many_then_read(1, 0, 6, true, seed).verdict, Verdict::pass) << "seed " << seed;
  }
}

TEST(SpanRuns, ARunPutAsideMidItemIsCheckedThen) {
  // 20 buffers: the first ones' runs are put aside (checked) while the writer still runs.
  for (int which : {0, 5, 19}) {
    const auto r = write_many_then_read(20, which, 7, false, 1);
    ASSERT_EQ(r.verdict, Verdict::race) << "buffer " << which;
    EXPECT_EQ(write_many_then_read(20, which, 7, true, 1).verdict, Verdict::pass) << "buffer " << which;
  }
}

// A buffer of `rows` x `cols` i64 on rank 0, all written (nothing reads uninitialised memory).
core::Buffer table(Harness& h, int64_t rows, int64_t cols) {
  core::Buffer b = h.rt.device(0).alloc(core::Dtype::i64, core::Shape{rows, cols}, "test");
  b.mark_all_written();
  return b;
}

// The writer writes element `element` of `b`; the reader reads the element ranges `reads` (first,
// count) through one view and leaves that view's memo in `memo` (first, end).
core::RunResult write_then_read_ranges(Harness& h, const core::Buffer& b, int64_t element,
                                       std::vector<std::pair<int64_t, int64_t>> reads, bool ordered,
                                       std::pair<int64_t, int64_t>& memo) {
  return writer_then_reader(
      h, ordered, [b, element] { kernels::Span<int64_t>(static_cast<int64_t*>(b.data()), b.count())[element] = 1; },
      [b, reads, &memo] {
        const kernels::Span<const int64_t> view(static_cast<const int64_t*>(b.data()), b.count());
        for (const auto& [first, count] : reads) (void)view.read_range(first, count);
        memo = {view.memo_first, view.memo_end};
      });
}

TEST(SpanRuns, ARangeThatStartsInsideARunAndGoesPastItGrowsTheRunWhoseTailStillRaces) {
  // The reader reads elements [0, 4), then [2, 8) (a request's last KV block, one slot longer in
  // its next row): the detector grows the first run to [0, 8) and answers with all of it, and
  // the writer's element 6, reached only by the second range, races unless an event orders them.
  for (const bool ordered : {false, true}) {
    Harness h(1, race_config());
    std::pair<int64_t, int64_t> memo{-1, -1};
    const auto r = write_then_read_ranges(h, table(h, 8, 1), 6, {{0, 4}, {2, 6}}, ordered, memo);
    EXPECT_EQ(memo, (std::pair<int64_t, int64_t>{0, 8})) << "one run of [0, 8)";
    ASSERT_EQ(r.verdict, ordered ? Verdict::pass : Verdict::race);
    if (!ordered) {
      EXPECT_EQ(race_sites(r), row_race(6));
    }
  }
}

TEST(SpanRuns, HalfRowsOfOneRowAfterAnotherGrowOneRunAndTheLaterRowsStillRace) {
  // A [6, 4] buffer whose rows 0..3 the reader reads half of, row after row (a TP rank's lanes):
  // the detector grows one run over rows 0..3 (cells are rows) and answers with it. The writer's
  // element in row 2, a lane the reader did not touch, is in a row the reader read: a race unless
  // an event orders them; row 5, which the reader did not read, never races.
  for (const bool ordered : {false, true}) {
    for (const int64_t written_row : {2, 5}) {
      Harness h(1, race_config());
      std::pair<int64_t, int64_t> memo{-1, -1};
      const auto r = write_then_read_ranges(h, table(h, 6, 4), written_row * 4 + 3, {{0, 2}, {4, 2}, {8, 2}, {12, 2}},
                                            ordered, memo);
      EXPECT_EQ(memo, (std::pair<int64_t, int64_t>{0, 14})) << "one run from row 0's first element to row 3's second";
      const bool race = !ordered && written_row < 4;
      ASSERT_EQ(r.verdict, race ? Verdict::race : Verdict::pass) << "ordered " << ordered << ", row " << written_row;
      if (race) {
        EXPECT_EQ(race_sites(r), row_race(2));
      }
    }
  }
}

TEST(SpanRuns, ARowSkippedBetweenTwoHalfRowsIsNotTakenIntoTheRun) {
  // The reader reads half of rows 0 and 2 of a [4, 4] buffer: row 1 lies between them, untouched,
  // so the writer's row 1 on another stream, unordered, does not race.
  Harness h(1, race_config());
  std::pair<int64_t, int64_t> memo{-1, -1};
  EXPECT_EQ(write_then_read_ranges(h, table(h, 4, 4), 4, {{0, 2}, {8, 2}}, false, memo).verdict, Verdict::pass);
  EXPECT_EQ(memo, (std::pair<int64_t, int64_t>{8, 10})) << "a run of its own for row 2";
}

TEST(SpanRuns, AViewKeptAcrossItemsIsToldAgainInEach) {
  // One view object serves a writer on main and then a reader on side: the reader's access must
  // be told in its own item, not taken for the writer's.
  for (const bool ordered : {false, true}) {
    Harness h(1, race_config());
    const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
    const kernels::Span<int64_t> view(static_cast<int64_t*>(b.data()), b.count());
    const auto r = writer_then_reader(
        h, ordered, [&view] { view[1] = 3; }, [&view] { (void)kernels::Span<const int64_t>(view)[1]; });
    EXPECT_EQ(r.verdict, ordered ? Verdict::pass : Verdict::race);
  }
}

}  // namespace
}  // namespace ppspec::testing
