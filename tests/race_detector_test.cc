// The happens-before race detector (sim/race_detector.h), both ways: accesses that nothing orders
// race in every schedule, and each kind of synchronisation (stream order, events, host syncs,
// communication) removes the race.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

#include "core/call_site.h"
#include "kernels/span.h"
#include "tests/harness.h"

namespace ppspec::testing {
namespace {

using core::Label;
using core::Verdict;

sim::SimConfig race_config() {
  auto cfg = exact_config();
  cfg.detect_races = true;
  // Lazily loaded modules would drain the device at each kernel's first launch (R8), which orders
  // everything before it: as in the engine, whose warmup loads every kernel, nothing loads here.
  cfg.module_loading = core::ModuleLoading::eager;
  return cfg;
}

// A kernel on `s` that reads or writes element `row` of an i64 buffer through a Span, as engine
// kernels do.
void touch(Harness& h, core::RankId r, core::Stream s, const core::Buffer& b, int64_t row, bool write,
           const char* name) {
  core::KernelLaunch l;
  l.kernel = core::KernelRef{name, ""};
  l.work = 1;
  l.body = [b, row, write] {
    if (write) {
      kernels::Span<int64_t>(static_cast<int64_t*>(b.data()), b.count())[row] = 7;
    } else {
      const int64_t v = kernels::Span<const int64_t>(static_cast<const int64_t*>(b.data()), b.count())[row];
      (void)v;
    }
  };
  h.rt.device(r).launch(s, l);
}

struct TwoStreams {
  core::Stream main, side;
};

TwoStreams streams(Harness& h, core::RankId r) {
  return {h.rt.device(r).stream("main"), h.rt.device(r).stream("side")};
}

// Makes `to` wait for everything enqueued on `from` so far.
void order(Harness& h, core::RankId r, core::Stream from, core::Stream to) {
  auto& d = h.rt.device(r);
  const core::DeviceEvent e = d.event("order");
  d.record(e, from);
  d.stream_wait(to, e);
}

// One rank: `between` runs after the write on main is enqueued and before the read on side is.
core::RunResult write_then_read(uint64_t seed, const std::function<void(Harness&, TwoStreams)>& between,
                                int64_t read_row = 0) {
  Harness h(1, race_config(), seed);
  const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
  h.actor(0, [&] {
    const TwoStreams s = streams(h, 0);
    touch(h, 0, s.main, b, 0, true, "writer");
    between(h, s);
    touch(h, 0, s.side, b, read_row, false, "reader");
    h.rt.device(0).device_sync();
  });
  return h.run();
}

TEST(RaceDetector, UnorderedWriteAndReadOnTwoStreamsRaceInEverySchedule) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const auto r = write_then_read(seed, [](Harness&, TwoStreams) {});
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    const core::Finding& f = r.findings.front();
    EXPECT_EQ(core::to_string(f.kind), "stream-race");
    ASSERT_EQ(f.sites.size(), 2u);
    // Whichever ran first, both accesses are named: kernel, stream, buffer, row.
    std::set<std::string> what{f.sites[0].what, f.sites[1].what};
    EXPECT_EQ(what, (std::set<std::string>{"writer writes test row 0", "reader reads test row 0"})) << f.summary;
    std::set<std::string> actors{f.sites[0].actor, f.sites[1].actor};
    EXPECT_EQ(actors, (std::set<std::string>{"rank0.main", "rank0.side"}));
  }
}

TEST(RaceDetector, AnEventOrdersTheStreams) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = write_then_read(seed, [](Harness& h, TwoStreams s) { order(h, 0, s.main, s.side); });
    EXPECT_EQ(r.verdict, Verdict::pass) << "seed " << seed << ": "
                                        << (r.findings.empty() ? "" : r.findings.front().summary);
  }
}

TEST(RaceDetector, AHostSyncOrdersTheStreams) {
  for (uint64_t seed = 1; seed <= 8; ++seed)
    EXPECT_EQ(write_then_read(seed, [](Harness& h, TwoStreams s) { h.rt.device(0).stream_sync(s.main); }).verdict,
              Verdict::pass);
}

TEST(RaceDetector, AnEventRecordedBeforeTheWriteDoesNotOrderIt) {
  // The wait sees the record that precedes the write: the read still races with it.
  Harness h(1, race_config());
  const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
  h.actor(0, [&] {
    const TwoStreams s = streams(h, 0);
    auto& d = h.rt.device(0);
    const core::DeviceEvent e = d.event("too_early");
    d.record(e, s.main);
    touch(h, 0, s.main, b, 0, true, "writer");
    d.stream_wait(s.side, e);
    touch(h, 0, s.side, b, 0, false, "reader");
    d.device_sync();
  });
  EXPECT_EQ(h.run().verdict, Verdict::race);
}

TEST(RaceDetector, OtherElementsAndTwoReadsDoNotRace) {
  EXPECT_EQ(write_then_read(
                1, [](Harness&, TwoStreams) {}, /*read_row=*/1)
                .verdict,
            Verdict::pass);
  Harness h(1, race_config());
  const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
  h.actor(0, [&] {
    const TwoStreams s = streams(h, 0);
    touch(h, 0, s.main, b, 0, false, "reader_a");
    touch(h, 0, s.side, b, 0, false, "reader_b");
    h.rt.device(0).device_sync();
  });
  EXPECT_EQ(h.run().verdict, Verdict::pass);
}

// Rank 0 sends x to rank 1's y on communicator "c": each side's body runs after its comm init,
// and each rank synchronises its device after it.
using Side = std::function<void(Harness&, core::Communicator&, TwoStreams, const core::Buffer&)>;
core::RunResult exchange(uint64_t seed, const Side& sender, const Side& receiver) {
  Harness h(2, race_config(), seed);
  h.comm("c", {0, 1});
  const core::Buffer x = h.buffer(0, 4, core::Dtype::i64);
  const core::Buffer y = h.buffer(1, 4, core::Dtype::i64);
  for (core::RankId r : {0, 1})
    h.actor(r, [&, r] {
      auto& c = h.rt.comm_init("c", r);
      (r == 0 ? sender : receiver)(h, c, streams(h, r), r == 0 ? x : y);
      h.rt.device(r).device_sync();
    });
  return h.run();
}

// Rank 1 receives into y on main and reads y on side, ordered by an event or not.
core::RunResult send_then_read(bool order_the_read, uint64_t seed) {
  return exchange(
      seed,
      [](Harness& h, core::Communicator& c, TwoStreams s, const core::Buffer& x) {
        touch(h, 0, s.main, x, 0, true, "produce");
        c.send(x, 1, s.main, Label{"x"});
      },
      [order_the_read](Harness& h, core::Communicator& c, TwoStreams s, const core::Buffer& y) {
        c.recv(y, 0, s.main, Label{"x"});
        if (order_the_read) order(h, 1, s.main, s.side);
        touch(h, 1, s.side, y, 0, false, "consume");
      });
}

TEST(RaceDetector, AReceiveIsAWriteThatAReadOnAnotherStreamMustWaitFor) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto bad = send_then_read(false, seed);
    ASSERT_EQ(bad.verdict, Verdict::race) << "seed " << seed;
    EXPECT_NE(bad.findings.front().summary.find("recv"), std::string::npos) << bad.findings.front().summary;
    EXPECT_EQ(send_then_read(true, seed).verdict, Verdict::pass) << "seed " << seed;
  }
}

TEST(RaceDetector, ASendBufferRewrittenBeforeTheSendIsOrderedRaces) {
  // The send reads x on side; main rewrites x. Ordered only when main waits the send's event.
  for (bool ordered : {false, true}) {
    const auto r = exchange(
        1,
        [ordered](Harness& h, core::Communicator& c, TwoStreams s, const core::Buffer& x) {
          c.send(x, 1, s.side, Label{"x"});
          if (ordered) order(h, 0, s.side, s.main);
          touch(h, 0, s.main, x, 0, true, "overwrite");
        },
        [](Harness&, core::Communicator& c, TwoStreams s, const core::Buffer& y) { c.recv(y, 0, s.main, Label{"x"}); });
    EXPECT_EQ(r.verdict, ordered ? Verdict::pass : Verdict::race) << "ordered " << ordered;
  }
}

// Readers on streams a, b and c read row 0 concurrently (none orders another); then a writer on
// main waits for the readers in `waited` only. The detector keeps all three reads: the write races
// with the first reader it does not wait for, and with none once it waits for all three.
core::RunResult three_readers_then_write(const std::vector<int>& waited, bool reread_on_a) {
  Harness h(1, race_config());
  const core::Buffer b = h.buffer(0, 4, core::Dtype::i64);
  h.actor(0, [&] {
    auto& d = h.rt.device(0);
    const std::array<core::Stream, 3> readers{d.stream("a"), d.stream("b"), d.stream("c")};
    const core::Stream main = d.stream("main");
    const char* names[] = {"reader_a", "reader_b", "reader_c"};
    for (int i = 0; i < 3; ++i) touch(h, 0, readers[i], b, 0, false, names[i]);
    // A second read on a, after the others: the latest read is a's again, the others stay.
    if (reread_on_a) touch(h, 0, readers[0], b, 0, false, "reader_a");
    for (int i : waited) order(h, 0, readers[static_cast<size_t>(i)], main);
    touch(h, 0, main, b, 0, true, "writer");
    d.device_sync();
  });
  return h.run();
}

TEST(RaceDetector, AWriteRacesWithEachOfThreeConcurrentReadsItDoesNotWaitFor) {
  for (const bool reread : {false, true}) {
    EXPECT_EQ(three_readers_then_write({0, 1, 2}, reread).verdict, Verdict::pass) << "reread " << reread;
    for (int missing = 0; missing < 3; ++missing) {
      std::vector<int> waited;
      for (int i = 0; i < 3; ++i)
        if (i != missing) waited.push_back(i);
      const auto r = three_readers_then_write(waited, reread);
      ASSERT_EQ(r.verdict, Verdict::race) << "missing " << missing << ", reread " << reread;
      const std::string reader = std::string("reader_") + static_cast<char>('a' + missing) + " reads test row 0";
      std::set<std::string> what{r.findings.front().sites[0].what, r.findings.front().sites[1].what};
      EXPECT_EQ(what, (std::set<std::string>{"writer writes test row 0", reader})) << "missing " << missing;
    }
  }
}

TEST(RaceDetector, ADelayedStreamRunsItsItemsLater) {
  // The exploration knob: the same program, the side stream's kernel later by the delay.
  auto cfg = race_config();
  for (core::Time delay : {core::Time{0}, 100 * core::kUs}) {
    cfg.delayed_stream = "side";
    cfg.stream_delay = delay;
    Harness h(1, cfg);
    core::Time done = 0;
    h.actor(0, [&] {
      auto& d = h.rt.device(0);
      const core::Stream side = d.stream("side");
      const core::Time before = h.rt.now();
      core::KernelLaunch l;
      l.kernel = core::KernelRef{"k", ""};
      l.duration = 10 * core::kUs;
      d.preload(l.kernel);
      d.launch(side, l);
      d.stream_sync(side);
      done = h.rt.now() - before;
    });
    ASSERT_EQ(h.run().verdict, Verdict::pass);
    EXPECT_EQ(done >= 110 * core::kUs, delay > 0) << "delay " << delay << ": done after " << done;
  }
}

// A ring of two slots written on main, step after step; at "step 3" the side stream waits the
// event of slot `waited` (in that step, or in an earlier one) and reads slot `read`.
core::RunResult ring_read(int waited, bool wait_in_read_step, int read, uint64_t seed) {
  Harness h(1, race_config(), seed);
  std::array<core::Buffer, 2> ring;
  for (auto& b : ring) {
    b = h.rt.device(0).alloc(core::Dtype::i64, core::Shape{4, 1}, "ring");
    b.mark_all_written();
  }
  // The runtime keeps a view of each call site, as the engine's do: they stay here.
  std::array<std::string, 3> sites{core::step_call_site(1), core::step_call_site(2), core::step_call_site(3)};
  h.actor(0, [&] {
    const TwoStreams s = streams(h, 0);
    auto& d = h.rt.device(0);
    std::array<core::DeviceEvent, 2> done{d.event("ring.slot0"), d.event("ring.slot1")};
    for (int i = 0; i < 2; ++i) {
      h.rt.set_call_site(sites[static_cast<size_t>(i)], i + 1);
      touch(h, 0, s.main, ring[static_cast<size_t>(i)], 0, true, "writer");
      d.record(done[static_cast<size_t>(i)], s.main);
      if (!wait_in_read_step && i == waited) d.stream_wait(s.side, done[static_cast<size_t>(i)]);
    }
    h.rt.set_call_site(sites[2], 3);
    if (wait_in_read_step) d.stream_wait(s.side, done[static_cast<size_t>(waited)]);
    touch(h, 0, s.side, ring[static_cast<size_t>(read)], 0, false, "reader");
    d.device_sync();
  });
  return h.run();
}

std::string details_of(const core::RunResult& r) {
  std::string all;
  for (const std::string& d : r.findings.front().details) all += d + "\n";
  return all;
}

TEST(RaceDetector, AReadOfAnotherSlotThanTheOneWaitedForIsNamedAWrongSlot) {
  // Whichever end runs first in the schedule, the reader is the stream that waited for a slot.
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    EXPECT_EQ(ring_read(0, true, 0, seed).verdict, Verdict::pass);
    EXPECT_EQ(ring_read(1, true, 1, seed).verdict, Verdict::pass);
    const auto r = ring_read(0, true, 1, seed);
    ASSERT_EQ(r.verdict, Verdict::race);
    const std::string d = details_of(r);
    EXPECT_NE(d.find("a wrong slot index, most likely: in the same step rank0.side waited for event ring.slot0, which "
                     "orders it after writer writes ring row 0 (rank0.main) in slot 0 of the 2 buffers named ring, "
                     "but reads slot 1"),
              std::string::npos)
        << "seed " << seed << "\n"
        << d;
    EXPECT_EQ(d.find("record an event"), std::string::npos) << d;
  }
}

TEST(RaceDetector, AMissingWaitIsNotNamedAWrongSlot) {
  // The side stream waited slot 0's event in an earlier step and reads slot 1 with no wait of its
  // own: the edge is missing, and the remedy is the event.
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = ring_read(0, false, 1, seed);
    ASSERT_EQ(r.verdict, Verdict::race);
    const std::string d = details_of(r);
    EXPECT_EQ(d.find("wrong slot"), std::string::npos) << d;
    EXPECT_NE(d.find("order them: record an event"), std::string::npos) << d;
  }
}

TEST(RaceDetector, AnEventRecordedBeforeTheSlotsLastWriteIsNotNamedAWrongSlot) {
  // The side stream waits the right slot's event, recorded in step 2 before that step's write to
  // the slot: the wait covers the step's earlier work, and the remedy is to record the event later.
  Harness h(1, race_config());
  std::array<core::Buffer, 3> bufs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    bufs[i] = h.rt.device(0).alloc(core::Dtype::i64, core::Shape{4, 1}, i < 2 ? "ring" : "other");
    bufs[i].mark_all_written();
  }
  std::array<std::string, 3> sites{core::step_call_site(1), core::step_call_site(2), core::step_call_site(3)};
  h.actor(0, [&] {
    const TwoStreams s = streams(h, 0);
    auto& d = h.rt.device(0);
    const core::DeviceEvent slot1 = d.event("ring.slot1");
    h.rt.set_call_site(sites[0], 1);
    touch(h, 0, s.main, bufs[0], 0, true, "writer");
    h.rt.set_call_site(sites[1], 2);
    touch(h, 0, s.main, bufs[2], 0, true, "writer");
    d.record(slot1, s.main);
    touch(h, 0, s.main, bufs[1], 0, true, "writer");
    h.rt.set_call_site(sites[2], 3);
    d.stream_wait(s.side, slot1);
    touch(h, 0, s.side, bufs[1], 0, false, "reader");
    d.device_sync();
  });
  const auto r = h.run();
  ASSERT_EQ(r.verdict, Verdict::race);
  const std::string d = details_of(r);
  EXPECT_EQ(d.find("wrong slot"), std::string::npos) << d;
  EXPECT_NE(d.find("order them: record an event"), std::string::npos) << d;
}

}  // namespace
}  // namespace ppspec::testing
