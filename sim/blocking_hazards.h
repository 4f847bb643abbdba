// R8 hazards — `device-sync-in-flight`, `malloc-in-flight`, `module-load-in-flight` — decided from
// happens-before, so that a program notes the same hazards under every seed and strategy.
//
// The rule. A blocking call c (cudaDeviceSynchronize, cudaMalloc, or a module load) by host thread
// t of rank r waits for r's device to drain (R8). c is a hazard iff some waiting item X on r's
// device can hold c up while X's release depends on an action that c holds back:
//  * waiting item: a communication kernel (unless all it does is sends that fit eager_bytes, which
//    complete on their own, R4), or a persistent kernel spinning on a flag;
//  * X can hold c up when X's issue does not happen after c: t issued it before c, or another
//    thread of r issued it without having synchronised with c (in some schedule it is in c's drain);
//  * X's release: its partners posted and started (a partner starts behind the work queued before
//    it on its stream and communicator, R2), or its flag's set_flag issued and run;
//  * c holds back t's own actions after c and — a module load holds the context lock — every
//    runtime call of another host thread of r that happens neither before c nor before X's issue
//    (X's issue is a runtime call too: had the lock held it back, X would not be in c's drain).
// "Happens before" is the order the simulator's synchronisation implies whatever the schedule:
// program order; comm init, first-contact connections and group ends; a communication kernel's
// start after the work before it on its streams, its communicator (R2) and, under serial
// concurrency, its device (R7); its completion after its partners' starts (not for a send that
// fits eager_bytes: it may have been buffered); stream, event and device syncs after what they
// waited for; event waits; flags; host channels. Never the context lock, sleeps or virtual time:
// which thread takes a lock first, or how long a peer sleeps, is the schedule.
//
// So a harmless end-of-step sync (both ranks: all_reduce, then device_sync) is no hazard: the
// peer's all_reduce needs nothing from this rank after the sync. A sync while a receive's sender is
// posted but queued behind work that needs this host after the sync is one in every schedule.
//
// Two ways to see it, one per kind of run, both giving the same answer:
//  * the release happens: its vector clock shows whether it depends on a held-back action;
//  * the release never happens (the run ends with nothing able to move): the wait-for graph shows
//    where its waits lead (sim/wait_graph.h) — to t itself, to another thread of r that has yet
//    to act and does not know of c (a load), or to work whose issue shows a held-back action.
// With one host thread per rank the release can never depend on a held-back action and happen
// (it would wait for t while t waits for X): c is a hazard iff the run deadlocks with t blocked
// in c and its drain's waits lead back to t. So only ranks with several host threads keep clocks,
// and this class watches them; SimDevice::note_if_stuck_in_call covers every rank.
// A load counts as a blocking call from its start, before it waits for the context lock: a load
// that waits behind another load in one schedule takes the lock first in another.
//
// Limits. A run stopped before its end (fifo-misalignment under report, invalid-usage,
// step-limit) notes what it saw until then. Where two threads of a rank race each other other
// than through the context lock — work on one stream (its order is their enqueue order), a
// device sync by one while the other enqueues, the first launch of one kernel by both — the
// order the schedule gave is taken as happens-before, so such a program may note different
// hazards under different schedules; so may a deadlock whose waits lead to "any host thread of
// rank q" where q has several (the wait-for graph cannot tell which one will act).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/fiber.h"
#include "sim/vector_clock.h"
#include "sim/wait_graph.h"

namespace ppspec::sim {

struct CommKernel;
struct SimFlag;
class SimDevice;

// What a hazard report needs about the call and the waiting item.
struct BlockingHazard {
  BlockingKind kind;
  std::string action;  // "synchronizes the device", "loads module k[v]"
  std::string actor;   // the calling thread
  std::string origin;  // where the program was
  std::string item;    // the waiting item, in words
  std::string stream;  // where it runs
  std::string why;     // how its release depends on the call
};

class BlockingHazards {
 public:
  using Report = std::function<void(const BlockingHazard&)>;

  // The host threads of the rank, when there are two or more (and clocks are on); otherwise the
  // class stays inactive: the wait-for graph decides.
  void activate(std::vector<const Fiber*> hosts, Report report);
  bool active() const { return !hosts_.empty(); }

  void on_call(const Fiber& caller, BlockingKind kind, std::string action, std::string origin);
  // A waiting item was issued (`issue` is the issuer's clock): a communication kernel or a
  // persistent kernel's flag wait; returns its id for on_released.
  int64_t on_wait_issued(const VectorClock& issue, std::string item, std::string stream, const CommKernel* kernel,
                         const SimFlag* flag);
  void on_released(int64_t id, const VectorClock& release);
  void on_flag_set(const SimFlag* flag, const VectorClock& set);
  // The run ended with nothing able to move: items never released are judged by where their
  // waits lead (`dev` is this rank's device, where flags are set).
  void on_stuck(WaitGraph& graph, const SimDevice& dev);

  size_t calls() const { return calls_.size(); }
  size_t waits() const { return waits_.size(); }

 private:
  struct Call {
    BlockingKind kind;
    uint32_t thread;  // the caller's fiber id
    uint32_t index;   // the caller's own component at the call: its later actions have at least this
    VectorClock clock;
    std::string action, actor, origin;
  };
  struct Wait {
    int64_t id;
    VectorClock issue;
    VectorClock release;
    bool released = false;
    const CommKernel* kernel = nullptr;  // until released (kernels are reused once done)
    const SimFlag* flag = nullptr;       // a persistent kernel's flag; null for a communication kernel
    std::string item, stream;
  };

  bool can_hold_up(const Call& c, const Wait& w) const { return w.issue.get(c.thread) < c.index; }
  // The host thread whose held-back action the release depends on; null if none.
  const Fiber* held_back(const Call& c, const Wait& w) const;
  // The same for a release that never came: where its waits lead.
  const Fiber* held_back(const Call& c, const Wait& w, const StuckFrontier& waits) const;
  void check(const Call& c, const Wait& w);
  void report(const Call& c, const Wait& w, const Fiber& held);
  void prune();

  std::vector<const Fiber*> hosts_;
  Report report_;
  std::vector<Call> calls_;
  std::vector<Wait> waits_;
  int64_t next_id_ = 0;
};

}  // namespace ppspec::sim
