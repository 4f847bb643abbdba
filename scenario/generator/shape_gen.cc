// The RapidCheck front-end's draws (shape.h). Their order and ranges are those of the first
// version, so that a RapidCheck seed still gives the same program and the same shrinks.
#include "scenario/generator/shape.h"

namespace ppspec::generator {
namespace {

using program::OpType;

// The well-matched rounds, as the drawn index 0 .. 9 picks them (it shrinks towards an all_reduce).
struct Drawn {
  RoundKind kind;
  OpType collective = OpType::all_reduce;
};
constexpr Drawn kWellMatched[10] = {
    {RoundKind::collective, OpType::all_reduce},
    {RoundKind::collective, OpType::broadcast},
    {RoundKind::collective, OpType::all_gather},
    {RoundKind::transfer},
    {RoundKind::transfer},
    {RoundKind::ring},
    {RoundKind::launch},
    {RoundKind::event_handoff},
    {RoundKind::host_call},
    {RoundKind::sleep},
};

RoundSpec gen_well_matched_round() {
  RoundSpec r;
  const Drawn d = kWellMatched[static_cast<size_t>(*rc::gen::inRange(0, 10))];  // int, as it always was drawn
  r.kind = d.kind;
  r.collective = d.collective;
  r.comm = *rc::gen::inRange(0, 4);
  r.a = *rc::gen::inRange(0, 8);
  r.b = *rc::gen::inRange(0, 8);
  r.count = *rc::gen::inRange(0, 65);
  r.dtype = *rc::gen::inRange(0, 5);
  r.stream_a = *rc::gen::inRange(0, 3);
  r.stream_b = *rc::gen::inRange(0, 3);
  r.duration = *rc::gen::inRange(0, 50);
  return r;
}

RoundSpec gen_hazard_round() {
  RoundSpec h;
  h.kind = RoundKind::blocking_hazard;
  h.a = *rc::gen::inRange(0, 8);
  h.b = *rc::gen::inRange(0, 8);
  h.count = *rc::gen::inRange(0, 65);     // % 3: which blocking call
  h.duration = *rc::gen::inRange(0, 50);  // % 3: independent, dependent or queued sender
  h.stream_a = *rc::gen::inRange(0, 3);
  h.stream_b = *rc::gen::inRange(0, 3);
  return h;
}

// Somewhere among the rounds, ends included.
std::ptrdiff_t gen_position(const Shape& s) {
  return static_cast<std::ptrdiff_t>(*rc::gen::inRange<size_t>(0, s.rounds.size() + 1));
}

}  // namespace

rc::Gen<Shape> gen_shape() {
  return rc::gen::exec([] {
    Shape s;
    s.ranks = *rc::gen::inRange(2, 9);
    s.streams = *rc::gen::inRange(1, 4);
    s.comm_masks =
        *rc::gen::container<std::vector<uint32_t>>(*rc::gen::inRange(0, 3), rc::gen::inRange<uint32_t>(0, 256));
    const int n = *rc::gen::inRange(1, 30);
    for (int i = 0; i < n; ++i) s.rounds.push_back(gen_well_matched_round());
    s.config.concurrency = *rc::gen::inRange(0, 2);
    s.config.eager = *rc::gen::inRange(0, 3);
    s.config.runtime_connect = *rc::gen::arbitrary<bool>();
    s.config.loading = *rc::gen::inRange(0, 3);
    s.config.jitter_pct = *rc::gen::inRange(0, 50);
    return s;
  });
}

rc::Gen<Shape> gen_hazard_shape() {
  return rc::gen::exec([] {
    Shape s = *gen_shape();
    const int n = *rc::gen::inRange(1, 4);
    for (int i = 0; i < n; ++i) {
      const RoundSpec r = *rc::gen::exec(gen_hazard_round);
      s.rounds.insert(s.rounds.begin() + gen_position(s), r);
    }
    return s;
  });
}

rc::Gen<Shape> gen_race_shape() {
  return rc::gen::exec([] {
    Shape s = *gen_shape();
    s.race.on = true;
    s.race.rank = *rc::gen::inRange(0, s.ranks);
    s.race.sleep_us = *rc::gen::inRange(0, 4);  // about where a first round's host calls are
    s.config.loading = 1;  // lazy: the preload loads, and soon (a JIT compile would put it past the first rounds)
    s.config.runtime_connect = false;  // a race round's early receive must not wait for first contact (R1)
    if (s.ranks >= 3 && *rc::gen::arbitrary<bool>()) {
      RoundSpec r;
      r.kind = RoundKind::loader_race;
      r.a = *rc::gen::inRange(0, 8);
      r.b = *rc::gen::inRange(0, 8);
      r.count = *rc::gen::inRange(0, 65);
      r.stream_a = *rc::gen::inRange(0, 3);
      r.stream_b = *rc::gen::inRange(0, 3);
      // First, half the time: where the loader's preload most often lands inside it.
      const auto at = *rc::gen::arbitrary<bool>() ? 0 : gen_position(s);
      s.rounds.insert(s.rounds.begin() + at, r);
    }
    return s;
  });
}

}  // namespace ppspec::generator
