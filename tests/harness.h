// A small world for rule tests: N ranks on the simulator, actors written as lambdas.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/sim_runtime.h"
#include "tests/test_util.h"

namespace ppspec::testing {

inline sim::SimConfig exact_config() {
  sim::SimConfig c;
  c.jitter = 0;  // exact virtual times, so tests can assert them
  return c;
}

struct Harness {
  explicit Harness(int ranks, sim::SimConfig cfg = exact_config(), uint64_t seed = 1)
      : rt(ranks, cfg, sim::make_random_policy(seed), seed) {
    rt.events().subscribe(&rec);
  }
  void comm(const std::string& name, std::vector<core::RankId> members) { rt.declare_comm(name, members); }
  void actor(core::RankId r, std::function<void()> body, std::string name = "") {
    rt.spawn(core::ActorSpec{name.empty() ? fmt::format("rank{}.host", r) : std::move(name), r}, std::move(body));
  }
  core::Buffer buffer(core::RankId r, int64_t count, core::Dtype d = core::Dtype::f32) {
    core::Buffer b = rt.device(r).alloc(d, core::Shape{count, 1}, "test");
    b.mark_all_written();
    return b;
  }
  core::RunResult run() { return rt.run(); }

  Recorder rec;
  sim::SimRuntime rt;
};

}  // namespace ppspec::testing
