// The recurrent layer's rollback (kernels/recurrent.h): a verification block's rows run from the
// committed state, and committing at the accepted length leaves the state the recurrence over the
// accepted tokens alone gives; committing after every row (the rollback_last_stage_only fault's
// earlier stages) leaves another state whenever a draft was rejected, and the next step's outputs
// differ. The golden reference runs the recurrence over the accepted context only.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/checkpoint.h"
#include "verify/oracles/golden.h"
#include "kernels/recurrent.h"

namespace ppspec::testing {
namespace {

namespace kn = ppspec::kernels;

constexpr int32_t kRecLanes = 4;
constexpr size_t kRecLanesN = 4;
constexpr int32_t kRecWindow = 4;  // K = 3
constexpr int32_t kRecReqs = 3;

struct RecLayer {
  std::vector<uint32_t> v{0x11U, 0x2345U, 0x6789U, 0xABCDU};
  std::vector<uint32_t> a{0x9E3779B1U, 3U, 0x85EBCA77U, 0xC2B2AE3DU};
  std::vector<uint32_t> b{5U, 0x27D4EB2FU, 7U, 0x165667B1U};
  std::vector<uint32_t> state = std::vector<uint32_t>(kRecReqs * kRecLanes, 0);
  std::vector<uint32_t> scratch = std::vector<uint32_t>(kRecReqs * kRecWindow * kRecLanes, 0xDEADBEEFU);

  // One step over `row_req` / `positions` rows with inputs `y`; returns the outputs.
  std::vector<uint32_t> run(const std::vector<int32_t>& row_req, const std::vector<int64_t>& positions,
                            const std::vector<uint32_t>& y, int32_t lane_begin = 0, int32_t lane_count = kRecLanes) {
    const auto rows = static_cast<int64_t>(row_req.size());
    std::vector<uint32_t> x(static_cast<size_t>(rows * lane_count), 0xFFFFFFFFU);
    const kn::RecurrentLayerKernel k{row_req,   positions,  y,          v,          a,    b,       state,
                                     kRecLanes, lane_begin, lane_count, kRecWindow, rows, scratch, x};
    for (int64_t i = 0; i < rows; ++i) k.row(i);
    return x;
  }
  // Commits entry r's request at `computed[r]` tokens (num_computed is indexed by req-state index).
  void commit(const std::vector<int32_t>& idx, const std::vector<int32_t>& computed) {
    std::vector<int32_t> num_computed(kRecReqs, 0);
    for (size_t r = 0; r < idx.size(); ++r)
      if (idx[r] >= 0) num_computed[static_cast<size_t>(idx[r])] = computed[r];
    const kn::RecurrentCommitKernel k{idx, num_computed, scratch, kRecWindow, kRecLanes, state};
    for (size_t r = 0; r < idx.size(); ++r) k.row(static_cast<int64_t>(r));
  }
  // The plain recurrence over `ys` (rows of kRecLanes) from zero: the state, lane by lane.
  std::vector<uint32_t> plain(const std::vector<std::vector<uint32_t>>& ys) const {
    std::vector<uint32_t> s(kRecLanes, 0);
    for (const auto& y : ys)
      for (size_t j = 0; j < kRecLanesN; ++j) s[j] = kn::recurrent_step(s[j], y[j], v[j], a[j], b[j]);
    return s;
  }
  std::vector<uint32_t> state_of(int32_t req) const {
    return {state.begin() + req * kRecLanes, state.begin() + (req + 1) * kRecLanes};
  }
};

std::vector<uint32_t> rec_row(uint32_t seed) {
  std::vector<uint32_t> y;
  for (int32_t j = 0; j < kRecLanes; ++j) y.push_back(kn::mix32(seed * 31U + static_cast<uint32_t>(j)));
  return y;
}

std::vector<uint32_t> rec_concat(const std::vector<std::vector<uint32_t>>& rows) {
  std::vector<uint32_t> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

// A prefill of 6 rows for request 1 (committed whole), then a block of 1 + 3 rows of which
// `accepted` drafts are accepted.
TEST(RecurrentRollback, CommitAtTheAcceptedLengthEqualsTheRecurrenceOverAcceptedTokens) {
  for (int accepted = 0; accepted <= 3; ++accepted) {
    RecLayer l;
    std::vector<std::vector<uint32_t>> prefill;
    for (uint32_t t = 0; t < 6; ++t) prefill.push_back(rec_row(t));
    auto rows = prefill;
    rows.push_back(rec_row(90));  // two padded rows
    rows.push_back(rec_row(91));
    l.run({1, 1, 1, 1, 1, 1, -1, -1}, {0, 1, 2, 3, 4, 5, 0, 0}, rec_concat(rows));
    l.commit({1}, {6});
    EXPECT_EQ(l.state_of(1), l.plain(prefill));
    std::vector<std::vector<uint32_t>> block{rec_row(100), rec_row(101), rec_row(102), rec_row(103)};
    l.run({1, 1, 1, 1}, {6, 7, 8, 9}, rec_concat(block));
    l.commit({1}, {6 + 1 + accepted});
    auto context = prefill;
    for (int r = 0; r <= accepted; ++r) context.push_back(block[static_cast<size_t>(r)]);
    EXPECT_EQ(l.state_of(1), l.plain(context)) << accepted << " accepted";
    // The next step's output depends on the state: it equals the one over the accepted context.
    const auto next = l.run({1}, {7 + accepted}, rec_row(200));
    context.push_back(rec_row(200));
    const auto s = l.plain(context);
    for (size_t j = 0; j < kRecLanesN; ++j) EXPECT_EQ(next[j], kn::mix32(rec_row(200)[j] + s[j]));
  }
}

TEST(RecurrentRollback, CommittingTheWholeBlockDiffersWhenADraftIsRejected) {
  RecLayer right, fault;
  const std::vector<std::vector<uint32_t>> block{rec_row(1), rec_row(2), rec_row(3), rec_row(4)};
  for (RecLayer* l : {&right, &fault}) l->run({0, 0, 0, 0}, {0, 1, 2, 3}, rec_concat(block));
  right.commit({0}, {2});  // one draft accepted: rows 0 and 1
  fault.commit({0}, {4});  // the fault's earlier stage: the state after all K + 1 rows
  EXPECT_NE(right.state_of(0), fault.state_of(0));
  EXPECT_EQ(fault.state_of(0), fault.plain(block));
  EXPECT_NE(right.run({0}, {2}, rec_row(9)), fault.run({0}, {2}, rec_row(9)));
}

// Requests side by side in one batch, padded rows, a skipped entry, and TP shards of the lanes.
TEST(RecurrentRollback, RequestsOfABatchAndLaneShardsAreIndependent) {
  RecLayer batch, alone, lo, hi;
  const std::vector<uint32_t> y = rec_concat({rec_row(1), rec_row(2), rec_row(3), rec_row(4), rec_row(5), rec_row(6)});
  const auto x = batch.run({2, 2, 0, 0, 0, -1}, {0, 1, 0, 1, 2, 0}, y);
  const auto x0 = alone.run({0, 0, 0}, {0, 1, 2}, rec_concat({rec_row(3), rec_row(4), rec_row(5)}));
  EXPECT_EQ(std::vector<uint32_t>(x.begin() + 2 * kRecLanes, x.begin() + 5 * kRecLanes), x0);
  EXPECT_EQ(std::vector<uint32_t>(x.begin() + 5 * kRecLanes, x.end()), std::vector<uint32_t>(kRecLanes, 0));
  batch.commit({2, -1}, {2, 3});
  EXPECT_EQ(batch.state_of(2), batch.plain({rec_row(1), rec_row(2)}));
  EXPECT_EQ(batch.state_of(0), std::vector<uint32_t>(kRecLanes, 0));  // skipped: left as it was
  const auto xl = lo.run({2, 2, 0, 0, 0, -1}, {0, 1, 0, 1, 2, 0}, y, 0, 2);
  const auto xh = hi.run({2, 2, 0, 0, 0, -1}, {0, 1, 0, 1, 2, 0}, y, 2, 2);
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = 0; j < 2; ++j) {
      EXPECT_EQ(xl[i * 2 + j], x[i * kRecLanes + j]);
      EXPECT_EQ(xh[i * 2 + j], x[i * kRecLanes + 2 + j]);
    }
}

// The reference model with a recurrent layer differs from the attention model, and a rewritten
// position (a rejected draft) recomputes from there: the state is the one over the tokens kept.
TEST(RecurrentRollback, ReferenceRunsTheRecurrenceOverTheSequenceItHolds) {
  engine::ModelConfig attention;
  engine::ModelConfig hybrid;
  hybrid.recurrent_layers = {1};
  const engine::Checkpoint ca = engine::make_checkpoint(attention);
  const engine::Checkpoint ch = engine::make_checkpoint(hybrid);
  EXPECT_EQ(ca.embed_ctx, ch.embed_ctx);  // every other weight drawn as before
  EXPECT_EQ(ca.layers[1].w, ch.layers[1].w);
  verify::ReferenceSequence a(ca, attention), h(ch, hybrid), rewritten(ch, hybrid);
  for (int32_t t : {5, 9, 11, 3}) {
    a.set(a.size(), t);
    h.set(h.size(), t);
    rewritten.set(rewritten.size(), t);
  }
  EXPECT_EQ(a.lanes(3, 1)[0], h.lanes(3, 1)[0]);  // layer 0 is attention in both
  EXPECT_NE(a.lanes(3, 2)[0], h.lanes(3, 2)[0]);
  rewritten.set(2, 7);
  (void)rewritten.lanes(3, 4);
  rewritten.set(2, 11);  // the draft rewritten back: the same context, the same state
  EXPECT_EQ(std::vector<uint32_t>(rewritten.lanes(3, 4).begin(), rewritten.lanes(3, 4).end()),
            std::vector<uint32_t>(h.lanes(3, 4).begin(), h.lanes(3, 4).end()));
}

}  // namespace
}  // namespace ppspec::testing
