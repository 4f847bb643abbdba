// What a Span tells the race detector, and what it may leave untold (kernels/span.h,
// kernels/access.h): an element inside its memo, or the next one after the run its memo ends
// with, in the same mode, within the run's allocation, during the same item. The first tests
// check that protocol against a fake observer; the rest check, both ways, that a race whose
// access was never told (a run's element the Span added itself, a run put aside mid-item, a view
// kept across items) is still found.
#include <gtest/gtest.h>

#include <array>
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

// `writer` on main writes buffers[0..n) whole, element by element (all but each buffer's first
// element extend runs without a call, and past 16 buffers runs are put aside mid-item); `reader`
// on side then reads element `row` of buffer `which`, after an event that orders it or not.
core::RunResult write_many_then_read(int buffers, int which, int64_t row, bool ordered, uint64_t seed) {
  Harness h(1, race_config(), seed);
  std::vector<core::Buffer> bs;
  for (int i = 0; i < buffers; ++i) bs.push_back(h.buffer(0, 8, core::Dtype::i64));
  h.actor(0, [&] {
    auto& d = h.rt.device(0);
    const core::Stream main = d.stream("main"), side = d.stream("side");
    launch(h, main, "writer", [&bs] {
      for (const core::Buffer& b : bs) {
        const kernels::Span<int64_t> s(static_cast<int64_t*>(b.data()), b.count());
        for (int64_t i = 0; i < s.size; ++i) s[i] = i;
      }
    });
    if (ordered) {
      const core::DeviceEvent e = d.event("written");
      d.record(e, main);
      d.stream_wait(side, e);
    }
    const core::Buffer target = bs[static_cast<size_t>(which)];
    launch(h, side, "reader", [target, row] {
      (void)kernels::Span<const int64_t>(static_cast<const int64_t*>(target.data()), target.count())[row];
    });
    d.device_sync();
  });
  return h.run();
}

TEST(SpanRuns, AnElementOnlyARunReachedRacesAndIsNamed) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto r = write_many_then_read(1, 0, 6, false, seed);
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    std::set<std::string> what{r.findings.front().sites[0].what, r.findings.front().sites[1].what};
    EXPECT_EQ(what, (std::set<std::string>{"writer writes test row 6", "reader reads test row 6"}));
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

TEST(SpanRuns, ARangeThatStartsInsideARunAndGoesPastItGrowsTheRunWhoseTailStillRaces) {
  // The reader reads elements [0, 4), then [2, 8) (a request's last KV block, one slot longer in
  // its next row): the detector grows the first run to [0, 8) and answers with all of it, and
  // the writer's element 6, reached only by the second range, races unless an event orders them.
  for (const bool ordered : {false, true}) {
    Harness h(1, race_config());
    const core::Buffer b = h.buffer(0, 8, core::Dtype::i64);
    int64_t memo_first = -1, memo_end = -1;
    h.actor(0, [&] {
      auto& d = h.rt.device(0);
      const core::Stream main = d.stream("main"), side = d.stream("side");
      launch(h, main, "writer", [b] { kernels::Span<int64_t>(static_cast<int64_t*>(b.data()), b.count())[6] = 1; });
      if (ordered) {
        const core::DeviceEvent e = d.event("written");
        d.record(e, main);
        d.stream_wait(side, e);
      }
      launch(h, side, "reader", [b, &memo_first, &memo_end] {
        const kernels::Span<const int64_t> view(static_cast<const int64_t*>(b.data()), b.count());
        (void)view.read_range(0, 4);
        (void)view.read_range(2, 6);
        memo_first = view.memo_first;
        memo_end = view.memo_end;
      });
      d.device_sync();
    });
    const auto r = h.run();
    EXPECT_EQ(memo_first, 0);
    EXPECT_EQ(memo_end, 8) << "one run of [0, 8)";
    ASSERT_EQ(r.verdict, ordered ? Verdict::pass : Verdict::race);
    if (ordered) continue;
    std::set<std::string> what{r.findings.front().sites[0].what, r.findings.front().sites[1].what};
    EXPECT_EQ(what, (std::set<std::string>{"writer writes test row 6", "reader reads test row 6"}));
  }
}

TEST(SpanRuns, HalfRowsOfOneRowAfterAnotherGrowOneRunAndTheLaterRowsStillRace) {
  // A [4, 4] buffer whose rows the reader reads half of, row after row (a TP rank's lanes): the
  // detector grows one run over rows 0..3 (cells are rows) and answers with it; the writer's
  // element in row 2, lanes the reader did not touch, is the row the reader read: a race unless an
  // event orders them, and never one when the writer's row is one the reader did not read.
  for (const bool ordered : {false, true}) {
    for (const int64_t written_row : {2, 5}) {
      Harness h(1, race_config());
      core::Buffer b = h.rt.device(0).alloc(core::Dtype::i64, core::Shape{6, 4}, "test");
      b.mark_all_written();
      int64_t memo_first = -1, memo_end = -1;
      h.actor(0, [&] {
        auto& d = h.rt.device(0);
        const core::Stream main = d.stream("main"), side = d.stream("side");
        launch(h, main, "writer", [b, written_row] {
          kernels::Span<int64_t>(static_cast<int64_t*>(b.data()), b.count())[written_row * 4 + 3] = 1;
        });
        if (ordered) {
          const core::DeviceEvent e = d.event("written");
          d.record(e, main);
          d.stream_wait(side, e);
        }
        launch(h, side, "reader", [b, &memo_first, &memo_end] {
          const kernels::Span<const int64_t> view(static_cast<const int64_t*>(b.data()), b.count());
          for (int64_t row = 0; row < 4; ++row) (void)view.read_range(row * 4, 2);
          memo_first = view.memo_first;
          memo_end = view.memo_end;
        });
        d.device_sync();
      });
      const auto r = h.run();
      EXPECT_EQ(memo_first, 0);
      EXPECT_EQ(memo_end, 14) << "one run from row 0's first element to row 3's second";
      const bool race = !ordered && written_row < 4;
      ASSERT_EQ(r.verdict, race ? Verdict::race : Verdict::pass) << "ordered " << ordered << ", row " << written_row;
      if (!race) continue;
      std::set<std::string> what{r.findings.front().sites[0].what, r.findings.front().sites[1].what};
      EXPECT_EQ(what, (std::set<std::string>{"writer writes test row 2", "reader reads test row 2"}));
    }
  }
}

TEST(SpanRuns, ARowSkippedBetweenTwoHalfRowsIsNotTakenIntoTheRun) {
  // The reader reads half of rows 0 and 2 of a [4, 4] buffer: row 1 lies between them, untouched,
  // so the writer's row 1 on another stream, unordered, does not race.
  Harness h(1, race_config());
  core::Buffer b = h.rt.device(0).alloc(core::Dtype::i64, core::Shape{4, 4}, "test");
  b.mark_all_written();
  h.actor(0, [&] {
    auto& d = h.rt.device(0);
    const core::Stream main = d.stream("main"), side = d.stream("side");
    launch(h, main, "writer", [b] { kernels::Span<int64_t>(static_cast<int64_t*>(b.data()), b.count())[4] = 1; });
    launch(h, side, "reader", [b] {
      const kernels::Span<const int64_t> view(static_cast<const int64_t*>(b.data()), b.count());
      (void)view.read_range(0, 2);
      (void)view.read_range(8, 2);
    });
    d.device_sync();
  });
  EXPECT_EQ(h.run().verdict, Verdict::pass);
}

TEST(SpanRuns, AViewKeptAcrossItemsIsToldAgainInEach) {
  // One view object serves a writer on main and then a reader on side: the reader's access must
  // be told in its own item, not taken for the writer's.
  for (const bool ordered : {false, true}) {
    Harness h(1, race_config());
    const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
    const kernels::Span<int64_t> view(static_cast<int64_t*>(b.data()), b.count());
    h.actor(0, [&] {
      auto& d = h.rt.device(0);
      const core::Stream main = d.stream("main"), side = d.stream("side");
      launch(h, main, "writer", [&view] { view[1] = 3; });
      if (ordered) {
        const core::DeviceEvent e = d.event("written");
        d.record(e, main);
        d.stream_wait(side, e);
      }
      launch(h, side, "reader", [&view] { (void)kernels::Span<const int64_t>(view)[1]; });
      d.device_sync();
    });
    EXPECT_EQ(h.run().verdict, ordered ? Verdict::pass : Verdict::race);
  }
}

}  // namespace
}  // namespace ppspec::testing
