// The RapidCheck front-end: random well-matched programs for `ppspec fuzz` and the property tests.
//
// A Shape is a global sequence of rounds, each drawn as small integers (RoundSpec) that RapidCheck
// shrinks well, and resolved against the program's ranks, communicators and streams into the round
// vocabulary (round.h) by build(). Every rank issues its part of each round in round order, so
// every wait is on an earlier round and such a program completes under every schedule (no false
// alarms allowed).
//
// For the R8 hazard rule (sim/blocking_hazards.h), two variants break round order on purpose:
// blocking-hazard rounds, where a rank makes a blocking call while its receive spins and the sender
// may need what the rank does after the call (the program then hangs under every schedule, or
// under none); and a loader thread that races a rank's own thread for the context lock.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "scenario/generator/round.h"
#include "program/program.h"

namespace ppspec::generator {

// One round, drawn; build() resolves its indices modulo what they index.
struct RoundSpec {
  RoundKind kind = RoundKind::collective;  // collective, transfer, ring, launch, event_handoff, host_call,
                                           // sleep; blocking_hazard and loader_race in their variants
  program::OpType collective = program::OpType::all_reduce;  // a collective round's
  int comm = 0;                                              // which communicator
  int a = 0;                                                 // a rank / member choice
  int b = 0;                                                 // another rank / member choice
  int count = 1;  // elements; a host call's or hazard's % 3: which blocking call
  int dtype = 0;
  int stream_a = 0;
  int stream_b = 0;
  int duration = 0;  // microseconds; a hazard's % 3: independent, dependent or queued sender
};

struct ConfigSpec {
  int concurrency = 0;  // ok, serial
  int eager = 0;        // 0, 64 B, 1 MiB
  bool runtime_connect = true;
  int loading = 0;  // eager, lazy, jit
  int jitter_pct = 10;
};

// A loader thread on rank `rank` preloads a module (lazy loading) after `sleep_us`: its context
// lock races the rank's own thread. A loader_race round gives the race something to hold up.
struct RaceSpec {
  bool on = false;
  int rank = 0;
  int sleep_us = 0;
};

struct Shape {
  int ranks = 2;  // 2 .. 8
  int streams = 1;
  std::vector<uint32_t> comm_masks;  // extra communicators besides "world"
  std::vector<RoundSpec> rounds;
  ConfigSpec config;
  RaceSpec race;
};

rc::Gen<Shape> gen_shape();         // well-matched: passes under every schedule
rc::Gen<Shape> gen_hazard_shape();  // plus hazard rounds: hangs under every schedule or none
rc::Gen<Shape> gen_race_shape();    // plus a loader thread, and maybe a loader_race round
program::Program build(const Shape& s);

}  // namespace ppspec::generator
