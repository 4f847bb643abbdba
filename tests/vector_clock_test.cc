// sim/vector_clock.h against the plainest model of a vector clock (a map from thread to value),
// through random bumps, joins, copies, moves and clears, at sizes on both sides of the clock's
// inline capacity (where its components move to the heap and back).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "sim/vector_clock.h"

namespace ppspec::testing {
namespace {

using Model = std::map<uint32_t, uint32_t>;

void expect_same(const sim::VectorClock& c, const Model& m, uint32_t threads, int step) {
  ASSERT_EQ(c.size(), m.size()) << "step " << step;
  for (uint32_t t = 0; t < threads; ++t) {
    const auto it = m.find(t);
    ASSERT_EQ(c.get(t), it == m.end() ? 0U : it->second) << "thread " << t << ", step " << step;
  }
}

TEST(VectorClock, BehavesAsAMapOfComponentsAcrossItsInlineCapacity) {
  for (const uint32_t threads : {3U, 12U, 13U, 40U}) {
    std::mt19937 rng(threads);
    std::vector<sim::VectorClock> clocks(4);
    std::vector<Model> models(4);
    for (int step = 0; step < 4000; ++step) {
      const size_t a = rng() % 4, b = rng() % 4;
      switch (rng() % 8) {
        case 0:
        case 1:
        case 2: {  // a runtime call
          const uint32_t t = rng() % threads;
          clocks[a].bump(t);
          ++models[a][t];
          break;
        }
        case 3:
        case 4:  // a join (of itself too: no change)
          clocks[a].join(clocks[b]);
          for (const auto& [t, v] : Model(models[b])) models[a][t] = std::max(models[a][t], v);
          break;
        case 5:  // a copy
          clocks[a] = clocks[b];
          models[a] = models[b];
          break;
        case 6: {  // a move: the source is left empty
          sim::VectorClock moved(std::move(clocks[b]));
          EXPECT_TRUE(clocks[b].empty());
          clocks[b] = sim::VectorClock();
          clocks[a] = std::move(moved);
          Model m = std::move(models[b]);
          models[b].clear();
          models[a] = std::move(m);
          break;
        }
        default:
          if (rng() % 16 == 0) {
            clocks[a].clear();
            models[a].clear();
          }
      }
      for (size_t i = 0; i < clocks.size(); ++i) expect_same(clocks[i], models[i], threads, step);
    }
  }
}

// A join raises in place when every thread of the other clock is one of this clock's, and merges
// when one is not: after a partial raise too, each component is the larger of the two.
TEST(VectorClock, AJoinRaisesInPlaceOrMergesNewThreads) {
  for (const uint32_t threads : {6U, 30U}) {  // inline and spilled
    sim::VectorClock mine, other;
    Model model;
    for (uint32_t t = 0; t < threads; t += 2)
      for (uint32_t k = 0; k <= t % 5; ++k) {
        mine.bump(t);
        ++model[t];
      }
    for (uint32_t t = 0; t < threads; t += 2)  // the same threads, some further along
      for (uint32_t k = 0; k <= (t * 7) % 9; ++k) other.bump(t);
    for (uint32_t t = 0; t < threads; t += 2) model[t] = std::max(model[t], other.get(t));
    mine.join(other);
    expect_same(mine, model, threads, 0);
    // Then threads this clock lacks, between and after its own, beside larger values of its own.
    sim::VectorClock more;
    for (uint32_t t = 0; t < threads; ++t)
      for (uint32_t k = 0; k < 12; ++k) more.bump(t);
    for (uint32_t t = 0; t < threads; ++t) model[t] = std::max(model[t], 12U);
    mine.join(more);
    expect_same(mine, model, threads, 1);
    EXPECT_EQ(mine.size(), threads);
    // A clock of the odd threads joining one whose first thread (0) comes before all of its own.
    sim::VectorClock odd, first;
    Model odd_model;
    for (uint32_t t = 1; t < threads; t += 2) {
      odd.bump(t);
      odd_model[t] = 1;
    }
    for (uint32_t t = 0; t < threads; t += 3)
      for (uint32_t k = 0; k < 2; ++k) first.bump(t);
    for (uint32_t t = 0; t < threads; t += 3) odd_model[t] = 2;
    odd.join(first);
    expect_same(odd, odd_model, threads, 2);
  }
}

TEST(VectorClock, ACopyIsIndependentOfItsSourceWhetherInlineOrSpilled) {
  for (const uint32_t threads : {5U, 30U}) {
    sim::VectorClock c;
    for (uint32_t t = 0; t < threads; ++t) c.bump(threads - 1 - t);  // inserted at the front each time
    sim::VectorClock copy = c;
    c.bump(0);
    EXPECT_EQ(copy.get(0), 1U);
    EXPECT_EQ(c.get(0), 2U);
    EXPECT_EQ(copy.size(), threads);
  }
}

}  // namespace
}  // namespace ppspec::testing
