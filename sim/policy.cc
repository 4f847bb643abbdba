#include "sim/policy.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace ppspec::sim {
namespace {

class RandomPolicy final : public SchedulePolicy {
 public:
  explicit RandomPolicy(uint64_t seed) : seed_(seed), rng_(core::derive_seed(seed, 1)) {}
  size_t pick(std::span<Fiber* const> ready, uint64_t) override {
    return ready.size() == 1 ? 0 : static_cast<size_t>(rng_.below(ready.size()));
  }
  std::string describe() const override { return fmt::format("random:{}", seed_); }

 private:
  uint64_t seed_;
  core::Rng rng_;
};

class PctPolicy final : public SchedulePolicy {
 public:
  PctPolicy(uint64_t seed, int depth, uint64_t horizon)
      : seed_(seed), depth_(depth), horizon_(horizon), rng_(core::derive_seed(seed, 2)) {
    for (int i = 1; i < depth_; ++i) change_points_.push_back(1 + rng_.below(std::max<uint64_t>(horizon_, 1)));
    std::sort(change_points_.begin(), change_points_.end());
  }

  void on_spawn(Fiber& f) override {
    // Initial priorities sit above every priority a change point can assign (1 .. depth-1).
    f.priority = (uint64_t{1} << 40) + (rng_.next() >> 24);
  }

  size_t pick(std::span<Fiber* const> ready, uint64_t step) override {
    size_t best = highest(ready);
    while (next_change_ < change_points_.size() && change_points_[next_change_] <= step) {
      // The fiber that would run now is demoted below every other fiber.
      ready[best]->priority = static_cast<uint64_t>(depth_) - 1 - next_change_;
      ++next_change_;
      best = highest(ready);
    }
    return best;
  }

  std::string describe() const override { return fmt::format("pct:{}:{}:{}", depth_, horizon_, seed_); }

 private:
  static size_t highest(std::span<Fiber* const> ready) {
    size_t best = 0;
    for (size_t i = 1; i < ready.size(); ++i) {
      const Fiber& a = *ready[i];
      const Fiber& b = *ready[best];
      if (a.priority > b.priority || (a.priority == b.priority && a.id < b.id)) best = i;
    }
    return best;
  }

  uint64_t seed_;
  int depth_;
  uint64_t horizon_;
  core::Rng rng_;
  std::vector<uint64_t> change_points_;
  size_t next_change_ = 0;
};

class ReplayPolicy final : public SchedulePolicy {
 public:
  explicit ReplayPolicy(std::vector<uint32_t> decisions) : decisions_(std::move(decisions)) {}
  size_t pick(std::span<Fiber* const> ready, uint64_t) override {
    if (ready.size() == 1) return 0;
    if (next_ >= decisions_.size()) {
      diverged_ = true;
      return 0;
    }
    const uint32_t want = decisions_[next_++];
    for (size_t i = 0; i < ready.size(); ++i)
      if (ready[i]->id == want) return i;
    diverged_ = true;
    return 0;
  }
  bool diverged() const override { return diverged_; }
  std::string describe() const override { return fmt::format("replay:{}", decisions_.size()); }

 private:
  std::vector<uint32_t> decisions_;
  size_t next_ = 0;
  bool diverged_ = false;
};

}  // namespace

std::unique_ptr<SchedulePolicy> make_random_policy(uint64_t seed) { return std::make_unique<RandomPolicy>(seed); }

std::unique_ptr<SchedulePolicy> make_pct_policy(uint64_t seed, int depth, uint64_t horizon) {
  return std::make_unique<PctPolicy>(seed, depth, horizon);
}

std::unique_ptr<SchedulePolicy> make_replay_policy(std::vector<uint32_t> decisions) {
  return std::make_unique<ReplayPolicy>(std::move(decisions));
}

std::unique_ptr<SchedulePolicy> make_policy(const core::StrategySpec& spec, uint64_t seed) {
  if (spec.kind == core::StrategySpec::Kind::pct) return make_pct_policy(seed, spec.depth, spec.horizon);
  return make_random_policy(seed);
}

}  // namespace ppspec::sim
