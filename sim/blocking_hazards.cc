#include "sim/blocking_hazards.h"
#include "core/assert.h"

#include <algorithm>
#include <fmt/format.h>

namespace ppspec::sim {

void BlockingHazards::activate(std::vector<const Fiber*> hosts, Report report) {
  PPSPEC_ASSERT(hosts.size() >= 2, "only a rank with several host threads keeps clocks ({} threads)", hosts.size());
  for (const Fiber* f : hosts) PPSPEC_ASSERT(f->owns_component, "{} has no clock component", f->name);
  hosts_ = std::move(hosts);
  report_ = std::move(report);
}

const Fiber* BlockingHazards::held_back(const Call& c, const Wait& w) const {
  const Fiber* caller = nullptr;
  for (const Fiber* b : hosts_)
    if (b->id == c.thread) caller = b;
  PPSPEC_ASSERT(caller != nullptr, "a blocking call by fiber {} on a rank that does not know it", c.thread);
  // The caller's own actions after the call: it is blocked until the drain ends.
  if (w.release.get(c.thread) >= c.index) return caller;
  if (c.kind != BlockingKind::module_load) return nullptr;
  // The load holds the context lock: another thread's runtime call may come while the lock is
  // held, and wait for it — unless it happens before the load, or before the item's issue (the
  // issue is a runtime call too: while the lock is held it would wait, and the item would not be
  // in the load's drain).
  for (const Fiber* b : hosts_)
    if (b->id != c.thread && w.release.get(b->id) > std::max(c.clock.get(b->id), w.issue.get(b->id))) return b;
  return nullptr;
}

const Fiber* BlockingHazards::held_back(const Call& c, const Wait& w, const StuckFrontier& waits) const {
  for (const Fiber* h : waits.hosts) {
    // A stuck thread the release waits for has yet to act: if it is the caller, after the call;
    // if it is another thread of this rank that does not know of the load, in a runtime call
    // that happens neither before the load nor before the item's issue (both are past).
    if (h->id == c.thread) return h;
    const bool ours = std::find(hosts_.begin(), hosts_.end(), h) != hosts_.end();
    if (c.kind == BlockingKind::module_load && ours && h->clock.get(c.thread) < c.index) return h;
  }
  Wait probe = w;
  probe.release = waits.happened;  // the release would come after all of it
  return held_back(c, probe);
}

void BlockingHazards::check(const Call& c, const Wait& w) {
  PPSPEC_ASSERT(w.released);
  if (!can_hold_up(c, w)) return;
  if (const Fiber* held = held_back(c, w)) report(c, w, *held);
}

void BlockingHazards::on_stuck(WaitGraph& graph, const SimDevice& dev) {
  if (!active()) return;
  for (const Wait& w : waits_) {
    if (w.released || std::none_of(calls_.begin(), calls_.end(), [&](const Call& c) { return can_hold_up(c, w); }))
      continue;
    PPSPEC_ASSERT((w.kernel != nullptr) != (w.flag != nullptr), "waiting item {} is neither a kernel nor a flag wait",
                  w.id);
    const StuckFrontier waits = w.kernel != nullptr ? graph.release_of(*w.kernel) : graph.release_of(*w.flag, dev);
    for (const Call& c : calls_)
      if (can_hold_up(c, w))
        if (const Fiber* held = held_back(c, w, waits)) report(c, w, *held);
  }
}

void BlockingHazards::report(const Call& c, const Wait& w, const Fiber& held) {
  const std::string why =
      held.id == c.thread
          ? fmt::format("its release needs {} to act after the call: under some schedule the call never returns",
                        held.name)
          : fmt::format(
                "its release needs a runtime call of {} that happens neither before the load nor before the "
                "item's issue, which the load's context lock holds back: under some schedule the load never returns",
                held.name);
  report_(BlockingHazard{c.kind, c.action, c.actor, c.origin, w.item, w.stream, why});
}

void BlockingHazards::on_call(const Fiber& caller, BlockingKind kind, std::string action, std::string origin) {
  if (!active()) return;
  PPSPEC_ASSERT(caller.owns_component, "{} calls on a rank that keeps clocks without a component", caller.name);
  Call& c = calls_.emplace_back(Call{kind, caller.id, caller.clock.get(caller.id), caller.clock, std::move(action),
                                     caller.name, std::move(origin)});
  // Items released already (possibly completed long ago) may still be ones this call could have
  // waited for: their releases are in; the others are checked when they come.
  for (const Wait& w : waits_)
    if (w.released) check(c, w);
  prune();
}

int64_t BlockingHazards::on_wait_issued(const VectorClock& issue, std::string item, std::string stream,
                                        const CommKernel* kernel, const SimFlag* flag) {
  if (!active()) return -1;
  waits_.push_back(Wait{next_id_, issue, {}, false, kernel, flag, std::move(item), std::move(stream)});
  return next_id_++;
}

void BlockingHazards::on_released(int64_t id, const VectorClock& release) {
  if (!active() || id < 0) return;
  auto it = std::find_if(waits_.begin(), waits_.end(), [id](const Wait& w) { return w.id == id; });
  PPSPEC_ASSERT(it != waits_.end() && !it->released, "waiting item {} released twice or never issued", id);
  it->release = release;
  it->released = true;
  it->kernel = nullptr;
  const Wait w = *it;  // check() may prune nothing, but calls_ must not be walked with a live iterator
  for (const Call& c : calls_) check(c, w);
  prune();
}

void BlockingHazards::on_flag_set(const SimFlag* flag, const VectorClock& set) {
  if (!active()) return;
  std::vector<int64_t> ids;
  for (const Wait& w : waits_)
    if (w.flag == flag && !w.released) ids.push_back(w.id);
  for (int64_t id : ids) on_released(id, set);
}

void BlockingHazards::prune() {
  // A record matters while a future call or item can pair with it. Every live thread of the rank
  // knowing a call means later items happen after it; knowing a release means a later call
  // happens after everything the release depends on. An unreleased item keeps every call it can
  // hold up.
  auto live = [](const Fiber* f) { return f->state != FiberState::finished; };
  auto all_know = [&](uint32_t thread, uint32_t index) {
    return std::all_of(hosts_.begin(), hosts_.end(),
                       [&](const Fiber* f) { return !live(f) || f->clock.get(thread) >= index; });
  };
  // Only the components of this rank's threads decide held_back().
  std::erase_if(waits_, [&](const Wait& w) {
    return w.released && std::all_of(hosts_.begin(), hosts_.end(),
                                     [&](const Fiber* u) { return all_know(u->id, w.release.get(u->id)); });
  });
  std::erase_if(calls_, [&](const Call& c) {
    if (!all_know(c.thread, c.index)) return false;
    return std::none_of(waits_.begin(), waits_.end(), [&](const Wait& w) { return !w.released && can_hold_up(c, w); });
  });
}

}  // namespace ppspec::sim
