#include "sim/race_detector.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "sim/stream.h"
#include "sim/world.h"

namespace ppspec::sim {

void RaceDetector::on_alloc(core::RankId rank, const core::Buffer& b, std::string_view name, bool pinned) {
  if (!b.backed() || b.bytes() == 0) return;
  PPSPEC_ASSERT(allocations_.size() < kAllocationsMax, "more than {} allocations watched for races", kAllocationsMax);
  Allocation a;
  a.base = static_cast<const uint8_t*>(b.data());
  a.bytes = b.bytes();
  a.row_bytes = core::dtype_size(b.dtype()) * static_cast<size_t>(std::max<int64_t>(b.shape().cols, 1));
  a.rank = rank;
  a.pinned = pinned;
  a.name = std::string(name);
  if ((a.row_bytes & (a.row_bytes - 1)) == 0) a.row_shift = std::countr_zero(a.row_bytes);
  a.cells.resize((a.bytes + a.row_bytes - 1) / a.row_bytes);
  Allocation& kept = allocations_.emplace_back(std::move(a));
  const auto at = std::upper_bound(by_base_.begin(), by_base_.end(), kept.base,
                                   [](const uint8_t* p, const ByBase& x) { return p < x.base; });
  by_base_.insert(at, ByBase{kept.base, &kept});
}

void RaceDetector::begin(uint32_t actor, uint32_t tick, const VectorClock& clock, const AccessItem& item) {
  PPSPEC_ASSERT(!active_, "a race-checked item began inside another");
  PPSPEC_ASSERT(actor < Epoch::kNone, "fiber {} is past the race detector's {} actors", actor, Epoch::kNone);
  active_ = true;
  checking_ = !race_;
  current_ = Epoch{tick, static_cast<uint16_t>(actor), 0};
  PPSPEC_ASSERT(pending_.empty(), "runs of an earlier item left unchecked");
  // The previous item's end put every run aside: each is empty, and no view can extend it.
  PPSPEC_ASSERT(started_runs_ == 0 && next_run_ == 0, "runs of an earlier item are still open");
  clock_ = &clock;
  if (items_.size() <= actor) items_.resize(actor + 1);
  items_[actor].slot(tick) = ItemRecord{tick, item};
  kernels::t_access_observer = this;
  kernels::t_access_runs = runs_.data();
  ++kernels::t_access_item;
}

void RaceDetector::end() {
  PPSPEC_ASSERT(active_, "a race-checked item ended twice");
  check_runs();
  active_ = false;
  checking_ = false;
  clock_ = nullptr;
  kernels::t_access_observer = nullptr;
  kernels::t_access_runs = nullptr;
  if (race_ && !reported_) {
    reported_ = true;
    world_.request_stop(*race_);
  }
}

RaceDetector::Allocation* RaceDetector::find_allocation(const uint8_t* b, Allocation*& cached) {
  auto at = std::upper_bound(by_base_.begin(), by_base_.end(), b,
                             [](const uint8_t* q, const ByBase& x) { return q < x.base; });
  if (at == by_base_.begin()) return nullptr;
  --at;
  if (!at->allocation->holds(b)) return nullptr;  // host memory, or a buffer modelled by size only
  cached = at->allocation;
  return cached;
}

RaceDetector::Seen& RaceDetector::seen_slot(const void* first, size_t bytes, bool write) {
  // Addresses only pick a slot: what is reported never depends on them.
  const auto key = reinterpret_cast<uintptr_t>(first) ^ (bytes << 20) ^ (write ? 1 : 0);
  return seen_[(key >> 2 ^ key >> 11) & (kSeenSlots - 1)];
}

void RaceDetector::host_access(uint32_t actor, const VectorClock& clock, const AccessItem& item, const core::Buffer& b,
                               bool write) {
  PPSPEC_ASSERT(item.stream == nullptr && !item.host.empty(), "a host access names its host thread");
  begin(actor, clock.get(actor), clock, item);
  access_buffer(b, write);
  end();
}

void RaceDetector::access_buffer(const core::Buffer& b, bool write) {
  if (b.backed()) on_access(b.data(), b.bytes(), write);
}

kernels::CheckedBytes RaceDetector::on_access(const void* first, size_t bytes, bool write) {
  if (!checking_) return {};
  const auto* b = static_cast<const uint8_t*>(first);
  const uint8_t* e = b + bytes;
  // An exact repeat of an access that started a run (a KV block each of a request's rows sums):
  // recorded already, found without looking any further.
  Seen& seen = seen_slot(first, bytes, write);
  if (seen.first == first && seen.bytes == bytes && seen.write == write && seen.epoch.same(current_)) return {b, e};
  Allocation* a = allocation_of(first);
  if (a == nullptr) return {};  // host memory, or a buffer modelled by size only
  PPSPEC_ASSERT(e <= a->base + a->bytes, "an access of {} bytes at {} runs past {} ({} bytes)", bytes, b - a->base,
                a->name, a->bytes);
  // Only a run of the same allocation can hold the bytes or be continued by them (a run never
  // crosses an allocation's end): the first of them in index order that does, a run holding them
  // before one they continue. Which run takes them is decided by the item's accesses alone. (The
  // bytes right after the run a view's memo ends with never come here: the view extends it.)
  for (uint32_t live = a->live_runs; live != 0; live &= live - 1) {
    const auto i = static_cast<size_t>(std::countr_zero(live));
    const kernels::AccessRun& r = runs_[i];
    if (b >= r.begin && e <= r.end && (r.write || !write)) return answer(i);
    if (continues(*a, r, b, e, write)) return extend(i, e);
  }
  return start_run(seen, *a, b, e, write);
}

// A run of its own, in place of the one started longest ago, which waits to be checked. (A seen
// slot lost to another access may start a second run over bytes a run holds: checked later, its
// rows find this item's epoch and change nothing.)
kernels::CheckedBytes RaceDetector::start_run(Seen& seen, Allocation& a, const uint8_t* first, const uint8_t* end,
                                              bool write) {
  // Field by field: a whole-struct copy went through the stack and stalled on store forwarding.
  seen.first = first;
  seen.bytes = static_cast<size_t>(end - first);
  seen.epoch = current_;
  seen.write = write;
  if (pending_.size() >= kPendingRuns) check_runs();
  if (!checking_) return {};
  const size_t run = next_run_;
  next_run_ = (next_run_ + 1) % kRuns;
  put_aside(run);
  runs_[run] = kernels::AccessRun{first, end, a.base + a.bytes, write};
  run_info_[run].allocation = &a;
  a.live_runs |= 1U << run;
  started_runs_ |= 1U << run;
  return answer(run);
}

void RaceDetector::put_aside(size_t run) {
  kernels::AccessRun& r = runs_[run];
  Allocation* a = run_info_[run].allocation;
  if (a == nullptr) return;  // never started, or put aside already
  if (r.begin != r.end) pending_.push_back(PendingRun{a, r.begin, r.end, r.write});
  a->live_runs &= ~(1U << run);
  started_runs_ &= ~(1U << run);
  run_info_[run].allocation = nullptr;
  r = kernels::AccessRun{};  // empty, and no view can extend it: its end is nowhere
}

void RaceDetector::check_runs() {
  // The started runs, oldest first: bit i of `rotated` is run (next_run_ + i) % kRuns. Most items
  // start a few of the kRuns, and the others need no visit.
  const uint32_t mask = (1U << kRuns) - 1;
  uint32_t rotated = ((started_runs_ >> next_run_) | (started_runs_ << (kRuns - next_run_))) & mask;
  while (rotated != 0) {
    const auto i = static_cast<size_t>(std::countr_zero(rotated));
    rotated &= rotated - 1;
    put_aside((next_run_ + i) % kRuns);
  }
  PPSPEC_ASSERT(started_runs_ == 0, "a started run was not put aside");
  next_run_ = 0;
  for (const PendingRun& run : pending_) {
    if (!checking_) break;
    check_rows(run);
  }
  pending_.clear();
}

void RaceDetector::check_rows(const PendingRun& run) {
  Allocation& a = *run.allocation;
  PPSPEC_ASSERT(run.begin >= a.base && run.begin < run.end && run.end <= a.base + a.bytes, "a run outside {}", a.name);
  const size_t first_row = row_of(a, static_cast<size_t>(run.begin - a.base));
  const size_t last_row = row_of(a, static_cast<size_t>(run.end - a.base) - 1);
  if (run.write)
    check_rows_as<true>(a, first_row, last_row);
  else
    check_rows_as<false>(a, first_row, last_row);
}

template <bool kWrite>
void RaceDetector::check_rows_as(Allocation& a, size_t first_row, size_t last_row) {
  PPSPEC_ASSERT(first_row <= last_row && last_row < a.cells.size(), "rows [{}, {}] outside {}", first_row, last_row,
                a.name);
  Cell* cells = a.cells.data();
  const Epoch now = current_;
  for (size_t i = first_row; i <= last_row; ++i) {
    if (check_cell_own<kWrite>(cells[i], now)) continue;
    check_cell(a, i, kWrite);
    if (!checking_) return;  // a race: the first one ends the checks
  }
}

bool RaceDetector::ordered(const Epoch& e) const {
  // One stream's items run in its order; another's are ordered only through the clock.
  return e.none() || e.actor == current_.actor || clock_->get(e.actor) >= e.tick;
}

void RaceDetector::check_cell(Allocation& a, size_t index, bool write) {
  Cell& c = a.cells[index];
  // This item touched the element already (a kernel's rows re-read the same KV): nothing new.
  if (c.write.same(current_) || (!write && c.read.same(current_))) return;
  if (!ordered(c.write)) return report(a, index, c.write, write);
  Reads reads = reads_of(a, index);
  if (write) {
    for (const Epoch& r : reads)
      if (!ordered(r)) return report(a, index, r, write);
    c.write = Epoch{current_.tick, current_.actor, 1};
    set_reads(a, index, Reads{});
    return;
  }
  // A read: keep it unless an earlier read of this stream, or one ordered before it, is replaced.
  Epoch* slot = nullptr;
  for (Epoch& r : reads) {
    if (r.actor == current_.actor || r.none() || ordered(r)) {
      slot = &r;
      if (r.actor == current_.actor) break;
    }
  }
  if (slot == nullptr) {  // three concurrent readers already: the oldest goes (see the header)
    slot = &reads[0];
    for (Epoch& r : reads)
      if (r.tick < slot->tick) slot = &r;
  }
  *slot = current_;
  // The latest read first: the next access of this item finds it in the cell.
  if (slot != &reads[0]) std::swap(*slot, reads[0]);
  set_reads(a, index, reads);
}

RaceDetector::Reads RaceDetector::reads_of(const Allocation& a, size_t index) const {
  const Cell& c = a.cells[index];
  Reads reads{Epoch{c.read.tick, c.read.actor, 0}, Epoch{}, Epoch{}};
  if (c.read.write == kMoreReads) {
    const auto more = a.more_reads.find(index);
    PPSPEC_ASSERT(more != a.more_reads.end(), "{} row {}: its cell names more reads that are not kept", a.name, index);
    reads[1] = more->second[0];
    reads[2] = more->second[1];
  }
  return reads;
}

void RaceDetector::set_reads(Allocation& a, size_t index, const Reads& reads) {
  Cell& c = a.cells[index];
  const bool more = !reads[1].none() || !reads[2].none();
  PPSPEC_ASSERT(!more || !reads[0].none(), "{} row {}: reads kept without a latest one", a.name, index);
  if (more)
    a.more_reads[index] = {reads[1], reads[2]};
  else if (c.read.write == kMoreReads)
    a.more_reads.erase(index);
  c.read = Epoch{reads[0].tick, reads[0].actor, more ? kMoreReads : uint16_t{0}};
}

const AccessItem* RaceDetector::item_of(uint32_t actor, uint32_t tick) const {
  if (actor >= items_.size()) return nullptr;
  const ItemRecord* rec = items_[actor].find(tick);
  return rec != nullptr ? &rec->item : nullptr;
}

core::Site RaceDetector::site_of(uint32_t actor, uint32_t tick, bool write, const Allocation& a, size_t index) const {
  core::Site s;
  s.rank = a.rank;
  const auto row = static_cast<int64_t>(index);
  const AccessItem* found = item_of(actor, tick);
  if (found == nullptr) {
    s.what =
        fmt::format("{} {} row {} (an earlier item, no longer remembered)", write ? "writes" : "reads", a.name, row);
    return s;
  }
  const AccessItem& item = *found;
  s.actor = item.stream != nullptr ? item.stream->full_name() : std::string(item.host);
  std::string who = item.spec.empty() ? std::string(item.kernel) : fmt::format("{}[{}]", item.kernel, item.spec);
  if (item.operation)
    who = item.operations > 1 ? fmt::format("{} (group of {})", core::describe(*item.operation), item.operations)
                              : core::describe(*item.operation);
  s.what = fmt::format("{} {} {} row {}", who, write ? "writes" : "reads", a.name, row);
  s.origin = std::string(item.call_site);
  return s;
}

void RaceDetector::report(const Allocation& a, size_t index, const Epoch& earlier, bool write) {
  checking_ = false;  // the first race ends the checks: the run stops as this item ends
  core::Finding f;
  f.verdict = core::Verdict::race;
  const core::Site now = site_of(current_.actor, current_.tick, write, a, index);
  const core::Site before = site_of(earlier.actor, earlier.tick, earlier.write, a, index);
  f.sites = {now, before};
  const AccessItem* now_item = item_of(current_.actor, current_.tick);
  const AccessItem* before_item = item_of(earlier.actor, earlier.tick);
  const bool now_host = now_item != nullptr && now_item->stream == nullptr;
  const bool before_host = before_item != nullptr && before_item->stream == nullptr;
  if (now_host || before_host) {
    report_host(a, now, before, now_host, write, earlier.write != 0, f);
    race_ = std::move(f);
    return;
  }
  f.kind = core::FindingKind::stream_race;
  f.summary = fmt::format("rank{}: {} on {} and {} on {}, with no happens-before between them", a.rank, before.what,
                          before.actor.empty() ? "another stream" : before.actor, now.what, now.actor);
  f.details.push_back(fmt::format("{} (at {}) and {} (at {}) touch the same element of {}; {} a write", before.what,
                                  before.origin.empty() ? "?" : before.origin, now.what,
                                  now.origin.empty() ? "?" : now.origin, a.name,
                                  write && earlier.write ? "both are" : "one is"));
  // Either end may be the stream that waited for the wrong slot: whichever ran first.
  if (const auto hint = slot_hint(a, index, current_, earlier))
    f.details.push_back(describe_slot_hint(a, index, *hint, write, now.actor));
  else if (const auto reversed = slot_hint(a, index, earlier, current_))
    f.details.push_back(describe_slot_hint(a, index, *reversed, earlier.write != 0, before.actor));
  else
    f.details.push_back(
        "order them: record an event after the first on its stream and make the second's stream wait it "
        "(or synchronise the host between them); the race exists whether or not this schedule changed the data");
  race_ = std::move(f);
}

// A race one end of which is the host touching pinned memory (the other: a copy's DMA, a kernel,
// or another host thread). Named from the host's side: what it did, what the stream may still be
// doing, and the edge CUDA asks for (core/runtime.h).
void RaceDetector::report_host(const Allocation& a, const core::Site& now, const core::Site& before, bool now_is_host,
                               bool write, bool earlier_write, core::Finding& f) const {
  const core::Site& host = now_is_host ? now : before;
  const core::Site& other = now_is_host ? before : now;
  const bool host_writes = now_is_host ? write : earlier_write;
  const bool other_writes = now_is_host ? earlier_write : write;
  const std::string other_actor = other.actor.empty() ? "another stream" : other.actor;
  f.kind = core::FindingKind::pinned_host_race;
  f.summary = fmt::format(
      "rank{}: the host {} pinned {} ({} on {}, at {}) while {} on {} (enqueued at {}) may still {} it: "
      "nothing orders the two",
      a.rank, host_writes ? "rewrites" : "reads", a.name, host.what, host.actor,
      host.origin.empty() ? "?" : host.origin, other.what, other_actor, other.origin.empty() ? "?" : other.origin,
      other_writes ? "be writing" : "be reading");
  f.details.push_back(
      fmt::format("in this schedule the {} access came second; the race exists in every schedule, whether or "
                  "not the data changed",
                  now_is_host ? "host's" : "stream's"));
  if (other_writes && !host_writes)
    f.details.push_back(
        fmt::format("missing edge: the host may read a copy's destination only after event_sync of an event "
                    "recorded after the copy on {0}, stream_sync of {0} or device_sync, or in a host_func "
                    "enqueued after it on {0} (vLLM #36013)",
                    other_actor));
  else
    f.details.push_back(
        fmt::format("missing edge: the host may {} pinned memory that {} {} only once that has run: event_sync "
                    "of an event recorded after it on {}, stream_sync of that stream or device_sync first "
                    "(vLLM #32799)",
                    host_writes ? "rewrite" : "read", other_actor, other_writes ? "writes" : "reads", other_actor));
}

}  // namespace ppspec::sim
