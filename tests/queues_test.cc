// The simulator's bounded containers that replaced standard ones on hot paths: a stream's work
// queue (sim/work_queue.h) and a lane's post history (core/post_history.h). Each keeps a promise the
// code around it relies on: an item's address while it is queued, a label's text after the
// storage it came from is gone.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/post_history.h"
#include "sim/work_queue.h"

namespace ppspec {
namespace {

struct Item {
  int value = -1;
  std::shared_ptr<int> held;  // released when the item is popped
};

TEST(WorkQueue, ItemsComeOutInTheOrderTheyWentInAcrossGrowthAndWrapping) {
  sim::WorkQueue<Item> q;
  int next_in = 0, next_out = 0;
  // Pushes and pops interleaved so that the ring wraps, then grows while wrapped.
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < round % 7 + 1; ++i) q.push_back(Item{next_in++, nullptr});
    for (int i = 0; i < round % 5 && !q.empty(); ++i) {
      EXPECT_EQ(q.front().value, next_out++);
      q.pop_front();
    }
    ASSERT_EQ(q.size(), static_cast<size_t>(next_in - next_out));
    for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(q.at(i).value, next_out + static_cast<int>(i));
  }
}

TEST(WorkQueue, TheHeadKeepsItsAddressWhileMoreArePushedBehindIt) {
  sim::WorkQueue<Item> q;
  q.push_back(Item{0, nullptr});
  q.pop_front();  // the head now sits past the ring's first slot
  q.push_back(Item{1, nullptr});
  const Item* head = &q.front();
  for (int i = 2; i < 100; ++i) q.push_back(Item{i, nullptr});  // the ring grows several times
  EXPECT_EQ(&q.front(), head);
  EXPECT_EQ(head->value, 1);
}

TEST(WorkQueue, APopReleasesWhatTheItemHeldAtOnce) {
  sim::WorkQueue<Item> q;
  auto held = std::make_shared<int>(7);
  q.push_back(Item{0, held});
  EXPECT_EQ(held.use_count(), 2);
  q.pop_front();
  EXPECT_EQ(held.use_count(), 1);  // not when the slot is reused by a later push
}

core::OpDesc post(const std::string& label, int64_t count) {
  core::OpDesc d;
  d.kind = core::OpKind::send;
  d.dtype = core::Dtype::f32;
  d.count = count;
  d.label = core::Label{label, count};
  return d;
}

TEST(PostHistory, KeepsTheLastPostsByPositionOnceTheRingWraps) {
  core::PostHistory h;
  const auto total = static_cast<int64_t>(core::kPostHistoryMax) * 2 + 3;
  for (int64_t i = 0; i < total; ++i)
    h.push(post(i % 2 == 0 ? "pp_broadcast_sampled_tokens" : "pp_send_hidden_states", i));
  EXPECT_EQ(h.end(), total);
  EXPECT_EQ(h.first(), total - static_cast<int64_t>(core::kPostHistoryMax));
  for (int64_t p = h.first(); p < h.end(); ++p) {
    EXPECT_EQ(h.at(p).count, p);
    EXPECT_EQ(h.at(p).label.name, p % 2 == 0 ? "pp_broadcast_sampled_tokens" : "pp_send_hidden_states");
  }
}

TEST(PostHistory, ALabelOutlivesTheBufferItWasReadFrom) {
  core::PostHistory h;
  {
    // As a trace reader's line buffer: the same storage, overwritten with the next label.
    std::string line = "stage0_hidden_states_to_stage1";
    h.push(post(line, 1));
    line.replace(0, line.size(), "stage1_sampled_tokens_to_stage0");
    h.push(post(line, 2));
  }
  EXPECT_EQ(h.at(0).label.name, "stage0_hidden_states_to_stage1");
  EXPECT_EQ(h.at(1).label.name, "stage1_sampled_tokens_to_stage0");
}

TEST(PostHistory, MovingAHistoryKeepsItsLabels) {
  std::vector<core::PostHistory> lanes(1);
  lanes[0].push(post("a_label_longer_than_a_short_string", 1));
  lanes.resize(64);  // moves the first history
  EXPECT_EQ(lanes[0].at(0).label.name, "a_label_longer_than_a_short_string");
}

}  // namespace
}  // namespace ppspec
