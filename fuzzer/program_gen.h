// Random well-matched programs for `ppspec fuzz` and the property tests, and the perturbations that
// break them.
//
// A program is a global sequence of rounds (a collective, a p2p transfer, a grouped ring exchange,
// a kernel, an event hand-off, a sync or malloc, a sleep); every rank issues its part of each round
// in round order. Every wait is then on an earlier round, so such a program completes under every
// schedule (no false alarms allowed). Rounds are small integers, so RapidCheck shrinks them well.
//
// For the R8 hazard rule (sim/blocking_hazards.h), two variants break round order on purpose:
// hazard rounds, where a rank makes a blocking call while its receive spins and the sender may
// need what the rank does after the call (the program then hangs under every schedule, or under
// none); and a loader thread that races a rank's own thread for the context lock.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "program/program.h"

namespace ppspec::fuzzer {

struct RoundSpec {
  int kind = 0;     // what the round does (see program_gen.cc)
  int comm = 0;     // which communicator (modulo the number of them)
  int a = 0;        // a rank / member choice
  int b = 0;        // another rank / member choice
  int count = 1;    // elements
  int dtype = 0;
  int stream_a = 0;
  int stream_b = 0;
  int duration = 0;  // microseconds
};

struct ConfigSpec {
  int concurrency = 0;  // ok, serial
  int eager = 0;        // 0, 64 B, 1 MiB
  bool runtime_connect = true;
  int loading = 0;      // eager, lazy, jit
  int jitter_pct = 10;
};

// A loader thread on rank `rank` preloads a module (lazy loading) after `sleep_us`: its context
// lock races the rank's own thread. A race round (kind 11) gives the race something to hold up.
struct RaceSpec {
  bool on = false;
  int rank = 0;
  int sleep_us = 0;
};

struct Shape {
  int ranks = 2;
  int streams = 1;
  std::vector<uint32_t> comm_masks;  // extra communicators besides "world"
  std::vector<RoundSpec> rounds;
  ConfigSpec config;
  RaceSpec race;
};

// Round kinds past the well-matched ones (a communicator "early" over every rank carries them).
inline constexpr int kHazardRound = 10;  // a blocking call while a receive spins: see program_gen.cc
inline constexpr int kRaceRound = 11;    // the loader rank receives early, then sends what the sender needs

rc::Gen<Shape> gen_shape();         // well-matched: passes under every schedule
rc::Gen<Shape> gen_hazard_shape();  // plus hazard rounds: hangs under every schedule or none
rc::Gen<Shape> gen_race_shape();    // plus a loader thread, and maybe a race round
program::Program build(const Shape& s);

enum class Perturbation { extra, dropped, swapped, count, dtype, root };
std::string to_string(Perturbation p);

struct PerturbSpec {
  int kind = 0;
  int rank = 0;
  int op = 0;
};
rc::Gen<PerturbSpec> gen_perturb();

// Applies the perturbation to one rank's communication operations. Returns the rank perturbed and
// what was done, in words; the kind may fall back to a changed count where the requested one does
// not apply (no broadcast to re-root, no two operations on one channel to swap).
struct Perturbed {
  program::Program program;
  core::RankId rank = -1;
  std::string what;
};
Perturbed perturb(const program::Program& p, const PerturbSpec& spec);

}  // namespace ppspec::fuzzer
