// Pinned host memory in the race detector (sim/race_detector.h, core/runtime.h alloc_host), one
// rule per test and both ways: a host read of a D2H copy's destination races unless an event
// sync, a stream sync, a device sync or a later host function on the copy's stream orders it; a
// host write of an H2D copy's source races unless the copy is known to have run; a sync on the
// wrong stream orders nothing. Each race is reported in every schedule.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "tests/harness.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

sim::SimConfig pinned_race_config() {
  auto cfg = exact_config();
  cfg.detect_races = true;
  cfg.module_loading = core::ModuleLoading::eager;  // no load drains the device (R8) and orders everything
  return cfg;
}

struct PinnedWorld {
  explicit PinnedWorld(uint64_t seed) : h(1, pinned_race_config(), seed) {
    dev = h.buffer(0, 4, core::Dtype::i64);
    pinned = h.rt.device(0).alloc_host(core::Dtype::i64, core::Shape{4, 1}, "pinned");
  }
  Harness h;
  core::Buffer dev;
  core::Buffer pinned;
};

// The device buffer copied to pinned memory on `copy_stream`; `between` runs after the copy is
// enqueued; then the host reads the pinned buffer.
core::RunResult pinned_d2h_then_read(uint64_t seed, const char* copy_stream,
                                     const std::function<void(core::Device&, core::Stream copy)>& between) {
  PinnedWorld w(seed);
  w.h.actor(0, [&] {
    auto& d = w.h.rt.device(0);
    const core::Stream s = d.stream(copy_stream);
    d.stream("main");
    w.h.rt.set_call_site("test copy", 1);
    d.copy_to_host(s, w.pinned, w.dev);
    between(d, s);
    w.h.rt.set_call_site("test read", 2);
    (void)d.host_read<int64_t>(w.pinned);
    d.device_sync();
  });
  return w.h.run();
}

// The fix of vLLM #36013: an event recorded after the copy on its stream, synchronised on the host.
void pinned_sync_on_event(core::Device& d, core::Stream copy) {
  const core::DeviceEvent e = d.event("copied");
  d.record(e, copy);
  d.event_sync(e);
}

std::string pinned_first_summary(const core::RunResult& r) {
  return r.findings.empty() ? "" : r.findings.front().summary;
}

TEST(HostMemoryRace, AHostReadOfAD2HDestinationWithoutSyncRacesInEverySchedule) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const auto r = pinned_d2h_then_read(seed, "d2h", [](core::Device&, core::Stream) {});
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    const core::Finding& f = r.findings.front();
    EXPECT_EQ(core::to_string(f.kind), "pinned-host-race");
    ASSERT_EQ(f.sites.size(), 2u);
    // The copy (its stream and call site) and the host access (its thread and call site).
    std::set<std::string> actors{f.sites[0].actor, f.sites[1].actor};
    EXPECT_EQ(actors, (std::set<std::string>{"rank0.d2h", "rank0.host"})) << f.summary;
    std::set<std::string> origins{f.sites[0].origin, f.sites[1].origin};
    EXPECT_EQ(origins, (std::set<std::string>{"test copy", "test read"})) << f.summary;
    std::set<std::string> what{f.sites[0].what, f.sites[1].what};
    EXPECT_EQ(what, (std::set<std::string>{"memcpy_d2h_async writes pinned row 0", "host_read reads pinned row 0"}));
    EXPECT_NE(f.summary.find("the host reads pinned pinned"), std::string::npos) << f.summary;
    ASSERT_GE(f.details.size(), 2u);
    EXPECT_NE(f.details[1].find("event_sync"), std::string::npos) << f.details[1];
    EXPECT_NE(f.details[1].find("rank0.d2h"), std::string::npos) << f.details[1];
  }
}

TEST(HostMemoryRace, AnEventSyncAfterTheCopyOrdersTheRead) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = pinned_d2h_then_read(seed, "d2h", pinned_sync_on_event);
    EXPECT_EQ(r.verdict, Verdict::pass) << "seed " << seed << ": " << pinned_first_summary(r);
  }
}

TEST(HostMemoryRace, AnEventRecordedBeforeTheCopyDoesNotOrderTheRead) {
  PinnedWorld w(1);
  w.h.actor(0, [&] {
    auto& d = w.h.rt.device(0);
    const core::Stream s = d.stream("d2h");
    const core::DeviceEvent e = d.event("too_early");
    d.record(e, s);
    d.copy_to_host(s, w.pinned, w.dev);
    d.event_sync(e);
    (void)d.host_read<int64_t>(w.pinned);
    d.device_sync();
  });
  EXPECT_EQ(w.h.run().verdict, Verdict::race);
}

TEST(HostMemoryRace, AStreamSyncOfTheCopysStreamOrdersTheRead) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = pinned_d2h_then_read(seed, "d2h", [](core::Device& d, core::Stream s) { d.stream_sync(s); });
    EXPECT_EQ(r.verdict, Verdict::pass) << "seed " << seed << ": " << pinned_first_summary(r);
  }
}

TEST(HostMemoryRace, ADeviceSyncOrdersTheRead) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = pinned_d2h_then_read(seed, "d2h", [](core::Device& d, core::Stream) { d.device_sync(); });
    EXPECT_EQ(r.verdict, Verdict::pass) << "seed " << seed << ": " << pinned_first_summary(r);
  }
}

TEST(HostMemoryRace, ASyncOnTheWrongStreamDoesNotOrderTheRead) {
  // The copy on a side stream; the host synchronises main (and an event recorded on main), as a
  // step's own stream_sync(main) would: the read still races with the copy.
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = pinned_d2h_then_read(seed, "d2h", [](core::Device& d, core::Stream) {
      const core::Stream main = d.stream("main");
      const core::DeviceEvent e = d.event("on_main");
      d.record(e, main);
      d.event_sync(e);
      d.stream_sync(main);
    });
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    EXPECT_EQ(core::to_string(r.findings.front().kind), "pinned-host-race");
  }
}

TEST(HostMemoryRace, AHostFunctionAfterTheCopyOnItsStreamMayReadIt) {
  for (bool same_stream : {true, false}) {
    PinnedWorld w(1);
    w.h.actor(0, [&] {
      auto& d = w.h.rt.device(0);
      const core::Stream s = d.stream("d2h");
      const core::Stream other = d.stream("other");
      d.copy_to_host(s, w.pinned, w.dev);
      d.host_func(same_stream ? s : other, [&d, p = w.pinned] { (void)d.host_read<int64_t>(p); });
      d.device_sync();
    });
    const auto r = w.h.run();
    EXPECT_EQ(r.verdict, same_stream ? Verdict::pass : Verdict::race)
        << "same stream " << same_stream << ": " << pinned_first_summary(r);
  }
}

// The host fills the pinned buffer, uploads it on `upload`, runs `between`, then rewrites it.
core::RunResult pinned_write_upload_rewrite(uint64_t seed,
                                            const std::function<void(core::Device&, core::Stream)>& between) {
  PinnedWorld w(seed);
  w.h.actor(0, [&] {
    auto& d = w.h.rt.device(0);
    const core::Stream s = d.stream("upload");
    d.host_write<int64_t>(w.pinned)[0] = 1;  // before the copy is enqueued: ordered by program order
    w.h.rt.set_call_site("test upload", 1);
    d.copy_to_device(s, w.dev, w.pinned);
    between(d, s);
    w.h.rt.set_call_site("test rewrite", 2);
    d.host_write<int64_t>(w.pinned)[0] = 2;
    d.device_sync();
  });
  return w.h.run();
}

TEST(HostMemoryRace, RewritingAnH2DSourceBeforeTheUploadRanRaces) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const auto r = pinned_write_upload_rewrite(seed, [](core::Device&, core::Stream) {});
    ASSERT_EQ(r.verdict, Verdict::race) << "seed " << seed;
    const core::Finding& f = r.findings.front();
    EXPECT_EQ(core::to_string(f.kind), "pinned-host-race");
    EXPECT_NE(f.summary.find("rewrites pinned"), std::string::npos) << f.summary;
    std::set<std::string> what{f.sites[0].what, f.sites[1].what};
    EXPECT_EQ(what, (std::set<std::string>{"memcpy_h2d_async reads pinned row 0", "host_write writes pinned row 0"}));
    ASSERT_GE(f.details.size(), 2u);
    EXPECT_NE(f.details[1].find("#32799"), std::string::npos) << f.details[1];
  }
}

TEST(HostMemoryRace, RewritingAnH2DSourceAfterTheUploadRanDoesNot) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto synced = pinned_write_upload_rewrite(seed, [](core::Device& d, core::Stream s) { d.stream_sync(s); });
    EXPECT_EQ(synced.verdict, Verdict::pass) << "seed " << seed << ": " << pinned_first_summary(synced);
    const auto evented = pinned_write_upload_rewrite(seed, pinned_sync_on_event);
    EXPECT_EQ(evented.verdict, Verdict::pass) << "seed " << seed << ": " << pinned_first_summary(evented);
  }
}

TEST(HostMemoryRace, TheCopiesMoveTheBytesAndOnlyPinnedMemoryIsHostMemory) {
  PinnedWorld w(1);
  int64_t seen = 0;
  w.h.actor(0, [&] {
    auto& d = w.h.rt.device(0);
    const core::Stream s = d.stream("copy");
    d.host_write<int64_t>(w.pinned)[2] = 42;
    d.copy_to_device(s, w.dev, w.pinned);
    d.host_write<int64_t>(w.pinned);  // not yet: only once the copy is known to have run
    d.device_sync();
  });
  EXPECT_EQ(w.h.run().verdict, Verdict::race);

  PinnedWorld v(1);
  v.h.actor(0, [&] {
    auto& d = v.h.rt.device(0);
    const core::Stream s = d.stream("copy");
    d.host_write<int64_t>(v.pinned)[2] = 42;
    d.copy_to_device(s, v.dev, v.pinned);
    d.stream_sync(s);
    d.host_write<int64_t>(v.pinned)[2] = 0;
    d.copy_to_host(s, v.pinned, v.dev);
    d.stream_sync(s);
    seen = d.host_read<int64_t>(v.pinned)[2];
    EXPECT_THROW(d.host_read<int64_t>(v.dev), std::invalid_argument);
    EXPECT_THROW(d.copy_to_host(s, v.dev, v.pinned), std::invalid_argument);
    EXPECT_THROW(d.copy_to_device(s, v.pinned, v.dev), std::invalid_argument);
  });
  EXPECT_EQ(v.h.run().verdict, Verdict::pass);
  EXPECT_EQ(seen, 42);
}

}  // namespace
}  // namespace ppspec::testing
