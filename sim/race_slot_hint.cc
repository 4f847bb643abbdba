// A race one end of which, in the same engine step, waited for an event that orders it after the
// other stream's access to another buffer of the same name — another slot of a ring — while the
// access it races with was enqueued in an earlier step, is most likely a wrong slot index, not a
// missing edge: the stream waited for the event of the slot it meant and touched another. The usual remedy (record
// an event, wait it) would order the two and keep the wrong slot's data, so the report says which
// slot the stream is ordered after and which one it touched.
#include <fmt/format.h>

#include "core/call_site.h"
#include "sim/race_detector.h"

namespace ppspec::sim {

void RaceDetector::on_event_wait(uint32_t actor, std::shared_ptr<const VectorClock> awaited, std::string_view event,
                                 std::string_view call_site) {
  if (!awaited) return;
  if (waits_.size() <= actor) {
    waits_.resize(actor + 1);
    waits_next_.resize(actor + 1, 0);
  }
  waits_[actor][waits_next_[actor]++ % kWaitsRemembered] = WaitRecord{std::move(awaited), event, call_site};
}

const RaceDetector::WaitRecord* RaceDetector::wait_covering(uint32_t actor, std::string_view call_site,
                                                            const Epoch& e) const {
  if (actor >= waits_.size()) return nullptr;
  for (const WaitRecord& w : waits_[actor])
    if (w.awaited && w.call_site == call_site && w.awaited->get(e.actor) >= e.tick) return &w;
  return nullptr;
}

// The last item of `other_actor` that the wait covers was enqueued before `step`: the event waited
// for closes an earlier step's work. One that closes part of `step`'s own work (recorded between two
// of its writes) was waited for the right step and recorded too early: the event is the fix.
bool RaceDetector::covers_an_earlier_step_only(const WaitRecord& w, uint32_t other_actor, int64_t step) const {
  const AccessItem* last = item_of(other_actor, w.awaited->get(other_actor));
  if (last == nullptr) return false;
  const auto last_step = core::step_of_call_site(last->call_site);
  return last_step && *last_step < step;
}

std::optional<RaceDetector::SlotHint> RaceDetector::slot_hint(const Allocation& a, size_t index, const Epoch& waiter,
                                                              const Epoch& other) const {
  const AccessItem* item = item_of(waiter.actor, waiter.tick);
  const AccessItem* other_item = item_of(other.actor, other.tick);
  if (item == nullptr || other_item == nullptr) return std::nullopt;
  // The other access must have been enqueued in an earlier engine step than the waiter's: then the
  // waiter could have waited for it, and waited for another slot instead. One enqueued later (a
  // rewrite of the slot the waiter still reads) is the writer's missing wait: the event is the fix.
  const auto step = core::step_of_call_site(item->call_site);
  const auto other_step = core::step_of_call_site(other_item->call_site);
  if (!step || !other_step || *other_step >= *step) return std::nullopt;
  std::optional<SlotHint> best;
  int same_name = 0;
  int slot_of_a = -1;
  for (const Allocation& s : allocations_) {
    if (s.rank != a.rank || s.name != a.name || s.row_bytes != a.row_bytes) continue;
    const int slot = same_name++;
    if (&s == &a) {
      slot_of_a = slot;
      continue;
    }
    if (index >= s.cells.size()) continue;
    // The other stream's latest access of this row of the sibling that an event waited for in this
    // item's step covers: the write, or one of the reads since.
    Epoch found;
    const WaitRecord* by = nullptr;
    const auto consider = [&](const Epoch& e) {
      if (e.none() || e.actor != other.actor || e.tick > other.tick || (!found.none() && e.tick < found.tick)) return;
      const WaitRecord* w = wait_covering(waiter.actor, item->call_site, e);
      if (w != nullptr && covers_an_earlier_step_only(*w, other.actor, *other_step)) {
        found = e;
        by = w;
      }
    };
    consider(s.cells[index].write);
    for (const Epoch& r : reads_of(s, index)) consider(r);
    if (by == nullptr || (best && best->epoch.tick >= found.tick)) continue;
    best = SlotHint{slot, -1, 0, found, s.cells[index].write.same(found), by->event};
  }
  if (!best) return std::nullopt;
  best->touched = slot_of_a;
  best->slots = same_name;
  return best;
}

std::string RaceDetector::describe_slot_hint(const Allocation& a, size_t index, const SlotHint& h, bool write,
                                             const std::string& actor) const {
  const core::Site after = site_of(h.epoch.actor, h.epoch.tick, h.write, a, index);
  return fmt::format(
      "a wrong slot index, most likely: in the same step {} waited for event {}, which orders it after {} ({}) in "
      "slot {} of the {} buffers named {}, but {} slot {}; an event between the two accesses would hide the race "
      "and keep the wrong slot's data: check which step's slot this step should touch",
      actor, h.event, after.what, after.actor, h.slot, h.slots, a.name, write ? "writes" : "reads", h.touched);
}

}  // namespace ppspec::sim
