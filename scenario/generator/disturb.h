// The one vocabulary and implementation of disturbances: what real code gets wrong on one rank,
// applied to that rank's units (draft.h) before they are flattened. The seeded generator
// (seeded.h) disturbs a round's share (a unit of several operations, say a group); the RapidCheck
// side (perturb.h) one operation (each a unit of its own). Which rank and unit is the front-end's
// choice; what a disturbance then does, and how it is said, is decided here.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/generator/draft.h"

namespace ppspec::generator {

enum class Disturbance : uint8_t {
  drop,    // the unit is never posted
  extra,   // posted twice
  count,   // another count (twice, or 3 for none)
  dtype,   // another dtype
  root,    // a broadcast from the next member
  peer,    // a send to, or a receive from, another member than the peer
  invert,  // two units of different communicators in the other order (invert_order)
  swap,    // two units on one channel (the same FIFO) in the other order
};

// The ones whose program NCCL runs and a Flight Recorder dump records faithfully, in the order
// the Flight Recorder differential cycles through them (its case index picks one).
inline constexpr Disturbance kHardwareDisturbances[] = {Disturbance::drop,  Disturbance::extra, Disturbance::count,
                                                        Disturbance::dtype, Disturbance::root,  Disturbance::peer,
                                                        Disturbance::invert};

// What the seeded generator draws when a case asks for a mutation of no given kind. Its own list,
// so that reordering the differential's table above changes no seed's program.
inline constexpr Disturbance kRandomMutations[] = {Disturbance::drop, Disturbance::extra, Disturbance::count,
                                                   Disturbance::dtype, Disturbance::root};

// drop, double, count, dtype, root, peer, invert, swap: the names the Flight Recorder tables use.
std::string_view to_string(Disturbance d);

// Chooses one of n > 0 alternatives, where a disturbance needs a choice (which other peer, which
// unit to swap with): the seeded generator draws it, a RapidCheck spec says it.
using Choose = std::function<size_t(size_t n)>;

struct RankUnits {
  std::vector<Unit>& units;
  core::RankId rank;
  const program::Program& program;  // its communicators
};

// Applies `kind` (not invert) to units[at], which communicates; returns what was done, in words.
// Falls back to a changed count where the kind does not apply: no broadcast to re-root, no send
// or receive to re-point (or no third member to point at), no other unit on the channel to swap.
std::string disturb(RankUnits r, size_t at, Disturbance kind, const Choose& choose);

// Swaps the first two neighbouring communicating units of different communicators; returns what
// was done, or nothing when there are no two.
std::string invert_order(RankUnits r);

// Whether the unit takes a place in a communicator's order: NCCL discards a collective of no
// elements before it does, so disturbing one changes nothing.
bool takes_place(const Unit& u);

}  // namespace ppspec::generator
