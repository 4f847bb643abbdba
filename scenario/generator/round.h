// The round vocabulary of the program generator (scenario/generator/README.md): what one round of a
// generated program does, resolved to ranks, streams and payloads. Both front-ends produce these
// rounds, the seeded generator (seeded.h) by drawing from core::Rng and the RapidCheck one
// (shape.h) by resolving a shrinkable Shape, and one builder (draft.h) turns them into operations.
//
// Every participating rank issues its share of a round in round order, so a program of the
// well-matched rounds completes under every schedule. Two rounds break that order on purpose, for
// the R8 hazard rule (sim/blocking_hazards.h): BlockingHazard and LoaderRace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/types.h"
#include "program/program.h"

namespace ppspec::generator {

// The elements of a communication round: the same on every rank that takes part.
struct Payload {
  int64_t count = 1;
  core::Dtype dtype = core::Dtype::f32;
};

// An all_reduce, broadcast (from `root`) or all_gather over every member of `comm`.
struct Collective {
  program::OpType type = program::OpType::all_reduce;
  std::string comm;
  std::vector<core::RankId> members;
  core::RankId root = -1;
  Payload payload;
  std::vector<std::string> streams;  // [member]
};

// One ungrouped send `from` -> `to`: first contact, and a send that may spin until its receive.
struct Transfer {
  std::string comm;
  core::RankId from = 0, to = 1;
  Payload payload;
  std::string send_stream, recv_stream;
};

// a <-> b: each side sends and receives, grouped (the correct way) or ungrouped, in either order.
struct Exchange {
  struct Side {
    core::RankId rank = 0;
    std::string send_stream, recv_stream;
    bool send_first = true;
  };
  std::string comm;
  Payload payload;
  bool grouped = true;
  Side sides[2];
};

// Every member sends to the one `shift` places on and receives from the one `shift` places back,
// in one group.
struct Ring {
  std::string comm;
  std::vector<core::RankId> members;
  int shift = 1;
  Payload payload;
  std::vector<std::string> send_streams, recv_streams;  // [member]
};

// An all-to-all's own block: a send to oneself and its receive, in one group; without the receive
// (`matched` false) NCCL rejects it at group end (ncclInvalidUsage).
struct SelfExchange {
  std::string comm;
  core::RankId rank = 0;
  int64_t count = 1;  // f32
  std::string stream;
  bool matched = true;
};

// Every member captures one communication (an all_reduce, or a grouped exchange of two members)
// into `graph`, then replays it `launches` times (R9).
struct GraphCapture {
  std::string comm;
  std::vector<core::RankId> members;
  std::string graph;
  bool p2p = false;
  int64_t count = 1;  // f32
  int launches = 1;
  std::vector<std::string> streams;  // [member]
};

// A compute kernel; a new (kernel, spec) loads a module under lazy or jit loading.
struct Launch {
  core::RankId rank = 0;
  std::string stream, kernel, spec;
  core::Time duration = -1;
};

// A module loaded ahead of its first launch.
struct Preload {
  core::RankId rank = 0;
  std::string kernel, spec;
};

// An event recorded on one stream, then waited for by another stream (wait_event) or by the host
// (event_sync, no stream).
struct EventHandoff {
  core::RankId rank = 0;
  std::string event, record_stream;
  program::OpType wait = program::OpType::wait_event;
  std::string wait_stream;
};

// A host call that blocks: stream_sync, device_sync or malloc (an implicit device sync, R8).
struct HostCall {
  core::RankId rank = 0;
  program::OpType type = program::OpType::device_sync;
  std::string stream;  // may be empty
  int64_t count = 1;   // malloc: bytes
};

struct Sleep {
  core::RankId rank = 0;
  core::Time duration = 0;
};

// Rank `receiver` receives x from `sender` on "early", then makes the blocking `call`. The sender
// sends x at once (independent: no hazard), or only after the receiver's y, which the receiver
// sends after the call: a stream_sync between (dependent) or x queued behind the receive of y on
// one stream (queued). Those hang under every schedule, through the call, unless the call blocks
// nothing (an eager launch).
struct BlockingHazard {
  enum class Sender : uint8_t { independent, dependent, queued };
  core::RankId sender = 0, receiver = 1;
  program::OpType call = program::OpType::device_sync;
  std::string call_stream, call_kernel;
  std::string sender_stream, receiver_stream;
  Sender variant = Sender::independent;
  Payload payload;
};

// The loader's rank receives x from `a` on "early", then sends y to `c`; c relays z to a, and a
// sends x only then. Should the loader thread's preload take the context lock between the loader
// rank's two calls, the send of y waits for the lock, the lock for the drain, the drain for x: a
// hang. Three distinct ranks, so that no two of them invert the order of two communicators (R7).
struct LoaderRace {
  core::RankId loader = 0, a = 1, c = 2;
  std::string x_stream, y_stream;
  Payload payload;
};

// The alternatives in this order: RoundKind names them (the static_asserts below hold the two together).
using RoundBody = std::variant<Collective, Transfer, Exchange, Ring, SelfExchange, GraphCapture, Launch, Preload,
                               EventHandoff, HostCall, Sleep, BlockingHazard, LoaderRace>;

enum class RoundKind : uint8_t {
  collective,
  transfer,
  exchange,
  ring,
  self_exchange,
  graph,
  launch,
  preload,
  event_handoff,
  host_call,
  sleep,
  blocking_hazard,
  loader_race,
};
static_assert(std::variant_size_v<RoundBody> == static_cast<size_t>(RoundKind::loader_race) + 1);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(RoundKind::self_exchange), RoundBody>, SelfExchange>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(RoundKind::loader_race), RoundBody>, LoaderRace>);

// Which host thread of its rank issues a round: the main one, or a second one (the seeded
// generator's "helper", the RapidCheck side's "loader").
enum class Thread : uint8_t { main, second };

struct Round {
  RoundBody body;
  std::string label;   // of its communication operations; empty: none (a Flight Recorder dump has none)
  std::string origin;  // of every operation; empty: none
  Thread thread = Thread::main;
};

}  // namespace ppspec::generator
