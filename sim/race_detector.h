// The happens-before race detector (DESIGN §7, verdict `race`). Every work item a stream runs
// tells it the bytes it touched: kernels through their Spans (kernels/access.h), copies and
// memsets by their ranges, communication kernels by their buffers (a send reads, a receive writes,
// a broadcast root reads and its other members write, an all-reduce writes, an all-gather reads
// its input and writes its output). Two accesses to one element, at least one a write, by items of
// different streams that happen-before neither way, are a race: the first one ends the run.
//
// Happens-before is the simulator's vector clocks (sim/vector_clock.h), extended with a component
// per stream: stream order, event records and waits, host syncs (stream, event, device), host
// channels, graph replays (their items are enqueued again) and communication (a kernel starts after
// its stream's earlier work; a receive or collective completes after its partners start). Clocks
// are assigned by the program's synchronisation, not by the schedule, so a race is reported in
// every schedule in which both accesses happen, whether or not the data changed.
//
// Shadow state is FastTrack's: per row of each backed allocation, the last write's epoch (stream,
// tick) and the epochs of the reads since that neither happened before another. A fourth
// concurrent reader replaces the oldest (no engine buffer has more than three readers at once;
// a dropped read can only hide a race, never invent one). A row's cell holds the write and the
// latest read; the other concurrent reads, rare, wait in a table of the allocation's.
//
// Granularity is the allocation's row: an element of the engine's [N, 1] buffers, a request's row
// of its [N, K] tables, a KV slot's lanes. Two streams touching different columns of one row
// would be reported; nothing in the engine does (its streams hand over whole rows), and elements
// would cost eight cells per KV slot, which the simulator's hottest loop reads by the thousand.
//
// Pinned host memory (core/runtime.h alloc_host) is watched the same way, with the host thread as
// one more component of the clocks: the host declares each access (host_read / host_write) and it
// is checked like a stream item's, against the DMA of copy_to_host / copy_to_device and any kernel
// of the same allocation. The host's component moves on at each of its accesses only, and reaches
// the streams through the work it enqueues afterwards; a stream's reaches the host through
// event_sync, stream_sync and device_sync (a host function's accesses are its stream's). So a host
// read of a D2H destination races unless a sync covering the copy came between, and a host write
// of an H2D source races unless the copy is known to have run (vLLM #36013, #32799). Such a race
// is reported as `pinned-host-race`, naming the copy (stream, call site), the host access (thread,
// call site) and the edge that would order them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/buffer.h"
#include "core/op.h"
#include "core/verdict.h"
#include "kernels/access.h"
#include "sim/item_ring.h"
#include "sim/vector_clock.h"

namespace ppspec::sim {

class SimStream;
class World;

// The work item whose accesses are being checked.
struct AccessItem {
  const SimStream* stream = nullptr;
  std::string_view kernel;
  std::string_view spec;
  std::string_view call_site;  // where the host enqueued it ("execute_model step 7")
  // A communication kernel: its first operation and how many it groups (words only in a report).
  std::optional<core::OpDesc> operation;
  uint32_t operations = 0;
  std::string_view host;  // a host access of pinned memory: the host thread (stream is null)
};

class RaceDetector final : public kernels::AccessObserver {
 public:
  // Items remembered per stream for reports; older ones are named by their stream only.
  static constexpr uint32_t kItemsRemembered = 4096;
  // Allocations per world (the engine makes ~60 per rank).
  static constexpr size_t kAllocationsMax = 1 << 17;  // engine::kRanksMax ranks, with room

  // The first race stops `world`'s run (World::request_stop) as the item that saw it ends.
  explicit RaceDetector(World& world) : world_(world) {}

  void on_alloc(core::RankId rank, const core::Buffer& b, std::string_view name, bool pinned = false);

  // A stream item starts: `clock` is the stream's clock, already advanced to `tick` in the
  // stream's own component `actor`. Accesses until end() are this item's.
  void begin(uint32_t actor, uint32_t tick, const VectorClock& clock, const AccessItem& item);
  void end();
  // A communication kernel's buffer, checked against the kernel's start clock.
  void access_buffer(const core::Buffer& b, bool write);

  kernels::CheckedBytes on_access(const void* first, size_t bytes, bool write) override;

  // The host thread `actor` touches pinned buffer `b` now; `clock` is its clock, already advanced
  // in its own component for this access.
  void host_access(uint32_t actor, const VectorClock& clock, const AccessItem& item, const core::Buffer& b, bool write);

  // Stream `actor` waited an event: from now on it is ordered after `awaited`. Remembered for the
  // wrong-slot hint of a later race (sim/race_slot_hint.cc).
  void on_event_wait(uint32_t actor, std::shared_ptr<const VectorClock> awaited, std::string_view event,
                     std::string_view call_site);

  // The first race, once seen.
  const std::optional<core::Finding>& race() const { return race_; }

 private:
  // 8 bytes: a cell is 16, and the engine's KV caches hold hundreds of thousands of them, whose
  // checks miss the cache (cachegrind: a third of the detector's misses were the cells' first
  // loads with 32-byte cells).
  struct Epoch {
    uint32_t tick = 0;
    uint16_t actor = kNone;
    uint16_t write = 0;
    static constexpr uint16_t kNone = UINT16_MAX;
    bool none() const { return actor == kNone; }
    bool same(const Epoch& o) const { return tick == o.tick && actor == o.actor; }
  };
  struct Cell {
    Epoch write;
    // The latest read since the write; its `write` field, which a read does not need, says that
    // earlier reads concurrent with it wait in the allocation's `more_reads` (kMoreReads).
    Epoch read;
  };
  static_assert(sizeof(Cell) == 16);
  static constexpr uint16_t kMoreReads = 1;
  // The reads of a row, latest first, as FastTrack keeps them: a none ends them.
  using Reads = std::array<Epoch, 3>;
  struct Allocation {
    const uint8_t* base = nullptr;
    size_t bytes = 0;
    size_t row_bytes = 1;
    int row_shift = -1;  // log2(row_bytes) when it is a power of two: no division on the hot path
    core::RankId rank = -1;
    bool pinned = false;  // host memory (alloc_host)
    std::string name;
    std::vector<Cell> cells;
    // Per row whose cell says so, the reads concurrent with its latest, beyond it (looked up,
    // never walked: its order never matters).
    std::unordered_map<size_t, std::array<Epoch, 2>> more_reads;
    uint32_t live_runs = 0;  // a bit per run of the running item that lies in this allocation
    bool holds(const uint8_t* p) const { return p >= base && p < base + bytes; }
  };
  struct ItemRecord {
    uint32_t tick = 0;
    AccessItem item;
  };

  // The allocation that holds `p`, if any.
  Allocation* allocation_of(const void* p) {
    const auto* b = static_cast<const uint8_t*>(p);
    // Addresses only pick a cache entry: which allocation holds `p` does not depend on it.
    Allocation*& cached = found_[(reinterpret_cast<uintptr_t>(p) >> kFoundGranule) & (kFound - 1)];
    if (cached != nullptr && cached->holds(b)) return cached;
    return find_allocation(b, cached);
  }
  [[gnu::noinline]] Allocation* find_allocation(const uint8_t* b, Allocation*& cached);
  bool ordered(const Epoch& e) const;  // e happens-before the current item
  void check_cell(Allocation& a, size_t index, bool write);
  // check_cell's common cases, where every earlier access is this stream's: nothing to compare
  // against another stream's clock. False when the general check is needed. `now` is current_,
  // passed by value so that it stays in registers while the cells are written.
  template <bool kWrite>
  static bool check_cell_own(Cell& c, Epoch now) {
    const auto own = [now](const Epoch& e) { return e.none() || e.actor == now.actor; };
    if (c.write.same(now)) return true;
    if (!own(c.write)) return false;
    if constexpr (!kWrite) {
      // Reads are kept latest first, so no latest read means no reads (check_cell); the reads
      // of other streams beyond it stay.
      if (!own(c.read)) return false;
      c.read = Epoch{now.tick, now.actor, c.read.write};
      return true;
    } else {
      if (!own(c.read) || c.read.write == kMoreReads) return false;
      c.write = Epoch{now.tick, now.actor, 1};
      c.read = Epoch{};
      return true;
    }
  }
  Reads reads_of(const Allocation& a, size_t index) const;
  void set_reads(Allocation& a, size_t index, const Reads& reads);
  template <bool kWrite>
  void check_rows_as(Allocation& a, size_t first_row, size_t last_row);
  void report(const Allocation& a, size_t index, const Epoch& earlier, bool write);
  const AccessItem* item_of(uint32_t actor, uint32_t tick) const;
  void report_host(const Allocation& a, const core::Site& now, const core::Site& before, bool now_is_host, bool write,
                   bool earlier_write, core::Finding& f) const;
  core::Site site_of(uint32_t actor, uint32_t tick, bool write, const Allocation& a, size_t index) const;
  // Another buffer of `a`'s name (a slot of the same ring) whose row `index` the stream of
  // `waiter` (one end of a race) was ordered after by an event it waited for in the same step (its
  // call site), on the stream of `other` (the other end): the slot it waited for, not the one it
  // touched (sim/race_slot_hint.cc).
  struct SlotHint {
    int slot = -1;     // which of the buffers named so, in allocation order, it waited for
    int touched = -1;  // which one it touched
    int slots = 0;
    Epoch epoch;  // the other stream's access of that slot's row
    bool write = false;
    std::string_view event;  // the event waited for
  };
  std::optional<SlotHint> slot_hint(const Allocation& a, size_t index, const Epoch& waiter, const Epoch& other) const;
  std::string describe_slot_hint(const Allocation& a, size_t index, const SlotHint& h, bool write,
                                 const std::string& actor) const;
  // A stream's latest event waits, for the hint: what each made it ordered after.
  struct WaitRecord {
    std::shared_ptr<const VectorClock> awaited;
    std::string_view event;
    std::string_view call_site;
  };
  static constexpr size_t kWaitsRemembered = 4;
  std::vector<std::array<WaitRecord, kWaitsRemembered>> waits_;
  std::vector<uint32_t> waits_next_;
  const WaitRecord* wait_covering(uint32_t actor, std::string_view call_site, const Epoch& e) const;
  bool covers_an_earlier_step_only(const WaitRecord& w, uint32_t other_actor, int64_t step) const;

  // An access this item already made, exactly (a KV block that each of a request's rows sums, a
  // block-table entry): checked once. Direct-mapped, valid for the epoch it holds only.
  struct Seen {
    const void* first = nullptr;
    size_t bytes = 0;
    Epoch epoch;
    bool write = false;
  };
  static constexpr size_t kSeenSlots = 512;
  Seen& seen_slot(const void* first, size_t bytes, bool write);

  // Allocations where they stay (a run, a pending run and the cache below point at them), and in
  // order of base: an address finds its allocation by bisection (which one holds it never depends
  // on addresses, only the search).
  std::deque<Allocation> allocations_;
  struct ByBase {
    const uint8_t* base;
    Allocation* allocation;
  };
  std::vector<ByBase> by_base_;
  // Allocations found, by the address bits above a 256-byte granule: a kernel's buffers, each in
  // entries of its own unless two small ones share a granule.
  static constexpr size_t kFound = 256;
  static constexpr int kFoundGranule = 8;
  std::array<Allocation*, kFound> found_{};
  std::vector<Seen> seen_ = std::vector<Seen>(kSeenSlots);
  // The runs of bytes this item has accessed (kernels/access.h: AccessRun): a kernel's loop walks
  // a few buffers row after row and element by element, so most accesses extend a run, many
  // without a call. The cells are checked when the item ends, run after run in the order the runs
  // were started (a run put aside for a new one waits in `pending_`): within an item nothing else
  // touches the cells, so checking later finds what checking at once would have found, and the
  // order depends on the item's accesses only, never on addresses (which race is reported first).
  struct RunInfo {
    Allocation* allocation = nullptr;  // null: not started, or put aside
  };
  struct PendingRun {
    Allocation* allocation = nullptr;
    const uint8_t* begin = nullptr;
    const uint8_t* end = nullptr;
    bool write = false;
  };
  static constexpr size_t kRuns = 16;
  static_assert(kRuns < 32, "Allocation::live_runs and started_runs_ hold a bit per run");
  static constexpr size_t kPendingRuns = 1 << 16;  // at this many, an item's runs so far are checked
  // A new run of [first, end) in `a`, remembered in `seen` as an exact access of this item.
  [[gnu::noinline]] kernels::CheckedBytes start_run(Seen& seen, Allocation& a, const uint8_t* first, const uint8_t* end,
                                                    bool write);
  void put_aside(size_t run);
  void check_runs();  // every run of the item so far, in the order they were started
  void check_rows(const PendingRun& run);
  kernels::CheckedBytes answer(size_t run) const {
    return {runs_[run].begin, runs_[run].end, static_cast<uint32_t>(run + 1)};
  }
  // The bytes [b, e) of `a`, accessed `write`, start at or after run `r`'s start, in its last row
  // or the row after, and go on past its end, the same way, inside the allocation (the next rows
  // of a loop; a request's last KV block, one slot longer in each of its rows; this TP rank's
  // lanes of one row after another): the run grows to hold them. Cells are rows, so the run's
  // rows are then exactly those of both, and the bytes in between that nobody touched add none.
  bool continues(const Allocation& a, const kernels::AccessRun& r, const uint8_t* b, const uint8_t* e,
                 bool write) const {
    return b >= r.begin && r.write == write && e <= r.limit &&
           row_of(a, static_cast<size_t>(b - a.base)) <= row_of(a, static_cast<size_t>(r.end - a.base) - 1) + 1;
  }
  kernels::CheckedBytes extend(size_t run, const uint8_t* e) {
    runs_[run].end = e;
    return answer(run);
  }
  size_t row_of(const Allocation& a, size_t offset) const {
    return a.row_shift >= 0 ? offset >> a.row_shift : offset / a.row_bytes;
  }
  std::array<kernels::AccessRun, kRuns> runs_{};
  std::array<RunInfo, kRuns> run_info_{};
  size_t next_run_ = 0;        // the run started longest ago: the next to be put aside
  uint32_t started_runs_ = 0;  // bit r: run r holds an allocation's accesses (not put aside yet)
  std::vector<PendingRun> pending_;
  bool checking_ = false;  // an item is active and no race has been seen
  // Per actor, its last kItemsRemembered items, grown 16 at a time (a fuzz case's streams run a
  // few dozen).
  std::vector<ItemRing<ItemRecord, kItemsRemembered, 16>> items_;
  bool active_ = false;
  Epoch current_;
  const VectorClock* clock_ = nullptr;
  World& world_;
  std::optional<core::Finding> race_;
  bool reported_ = false;
};

}  // namespace ppspec::sim
