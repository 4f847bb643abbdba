// A simulated thread of control: a host thread (actor) or a GPU stream. Every fiber records what
// it waits for, so that a deadlock can be explained as a wait-for graph.
#pragma once

#include <boost/fiber/context.hpp>
#include <boost/fiber/fiber.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/types.h"
#include "sim/fiber_stack.h"
#include "sim/vector_clock.h"

namespace ppspec::sim {

class SimStream;
class SimDevice;
struct CommKernel;
struct Connection;
struct CommInit;
class SimHostChannel;
struct SimFlag;
struct Fiber;

enum class FiberKind : uint8_t { host, stream };

enum class WaitKind : uint8_t {
  none,          // ready or running
  timer,         // sleeping until a virtual time (a kernel running, a host call's cost)
  idle,          // a stream with no work
  stream_sync,   // host waits for `stream` to drain
  launch_queue,  // host waits for room in `stream`'s launch queue (a launch blocks when it is full)
  event_sync,    // host waits for `event`
  device_drain,  // host waits for every stream of `device` (device sync, module load, malloc)
  context_lock,  // host waits for `holder` to release `device`'s context lock
  connect,       // host waits for peers to reach first contact on `connection`
  comm_init,     // host waits for the other members of `init`
  group_join,    // stream: `kernel` waits for its other streams to reach it
  comm_order,    // stream: `kernel` waits for an earlier communication kernel to finish
  peer,          // stream: `kernel` is resident and waits for its partners
  kernel_done,   // stream: a secondary stream of `kernel` waits for it to finish
  event_wait,    // stream: waits for `event`
  flag_wait,     // stream: a persistent kernel spins until `flag` is set
  channel,       // host: waits for a message on `channel`
  finished,
};

// An event wait in words, for reports: the event, where the awaited record was issued and where
// the wait was ("file.toml:12"; empty when the program did not say). Copied when the wait is
// issued, because a later record of the same event moves the event but not this wait.
struct EventWaitSite {
  std::string_view event;
  std::string_view recorded_at;
  std::string_view waited_at;
};

// A blocking call that can hold back its caller: a drain (device_sync, malloc) or a module load (R8).
// Which one a `device_drain` wait is decides how a deadlock through it is explained.
enum class BlockingKind : uint8_t { device_sync, malloc, module_load };

struct WaitInfo {
  WaitKind kind = WaitKind::none;
  std::string_view what{};  // the call, in words ("module load of post_update", "stream_sync(main)")
  BlockingKind drain = BlockingKind::device_sync;  // device_drain: which call drains the device
  SimStream* stream = nullptr;
  SimDevice* device = nullptr;
  CommKernel* kernel = nullptr;
  Connection* connection = nullptr;
  CommInit* init = nullptr;
  SimHostChannel* channel = nullptr;
  // event_sync, event_wait: where the wait's words live while it waits (the caller's frame, or the
  // stream's work item). A pointer: WaitInfo is reset on every wake-up, and three views cost.
  const EventWaitSite* event = nullptr;
  SimFlag* flag = nullptr;
  Fiber* holder = nullptr;
};

enum class FiberState : uint8_t { created, ready, running, blocked, finished };

struct HostState;  // per-actor runtime state (group nesting, ...), owned by the runtime

struct Fiber {
  uint32_t id = 0;  // creation order: deterministic, names the fiber in recorded schedules
  std::string name;
  FiberKind kind = FiberKind::host;
  core::RankId rank = -1;
  FiberState state = FiberState::created;
  WaitInfo wait;
  uint64_t priority = 0;  // PCT
  boost::fibers::context* ctx = nullptr;
  std::function<void()> body;
  boost::fibers::fiber handle;
  StackExtent stack;
  SimStream* stream = nullptr;  // for stream fibers
  HostState* host = nullptr;    // for host fibers
  // Host fibers: what this thread knows has happened (R8 hazards, sim/blocking_hazards.h), and
  // whether it owns a component of the clocks (it shares its rank with another host thread).
  VectorClock clock;
  bool owns_component = false;
};

}  // namespace ppspec::sim
