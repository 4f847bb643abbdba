// The reference model over a sequence and the model oracle, both ways: activations and greedy
// samples computed as the model defines them pass; a wrong deep lane, context lane or sample is
// reported at its step, rank and stage, with the hint its evidence supports.
#include <gtest/gtest.h>

#include <deque>
#include <fmt/format.h>

#include "core/hash.h"
#include "engine/checkpoint.h"
#include "verify/oracles/golden.h"
#include "tests/probe_events.h"
#include "verify/monitors/model_reference.h"

namespace ppspec::testing {
namespace {

using core::EventKind;

TEST(ReferenceSequence, AChangedTokenRecomputesFromItsPositionAndTruncateForgets) {
  engine::ModelConfig m;
  const engine::Checkpoint ckpt = engine::make_checkpoint(m);
  verify::ReferenceSequence a(ckpt, m), b(ckpt, m);
  for (int32_t t : {5, 9, 14, 3, 8}) a.set(a.size(), t);
  const auto before = std::vector<uint32_t>(a.lanes(4, m.layers).begin(), a.lanes(4, m.layers).end());
  a.set(2, 15);  // a rejected draft rewritten
  for (int32_t t : {5, 9, 15, 3, 8}) b.set(b.size(), t);
  for (size_t p = 0; p < 5; ++p) {
    EXPECT_EQ(a.context(p), b.context(p)) << p;
    for (int l = 0; l <= m.layers; ++l) {
      const auto x = a.lanes(p, l), y = b.lanes(p, l);
      EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << "position " << p << " layer " << l;
    }
    EXPECT_EQ(a.greedy(p), b.greedy(p));
  }
  EXPECT_FALSE(std::equal(before.begin(), before.end(), a.lanes(4, m.layers).begin()))
      << "position 4 attends over position 2: it must change with it";
  a.truncate(3);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(verify::golden_continuation(ckpt, m, {5, 9, 15}, 4).front(), a.greedy(2));
}

// pp 2, tp 1: rank 0 embeds and runs the first half of the layers, rank 1 the rest and samples.
struct OracleFixture {
  engine::ModelConfig model;
  std::shared_ptr<const engine::Checkpoint> ckpt =
      std::make_shared<const engine::Checkpoint>(engine::make_checkpoint(model));
  std::vector<core::Finding> found;
  ProbeEvents events;
  std::unique_ptr<verify::ModelReference> oracle;
  verify::ReferenceSequence truth{*ckpt, model};

  OracleFixture() {
    verify::ServingFacts facts;
    facts.pp = 2;
    facts.tp = 1;
    facts.k = 2;
    facts.vocab = model.vocab;
    facts.checkpoint = ckpt;
    facts.model = std::make_shared<const engine::ModelConfig>(model);
    facts.temperature_requests = {9};
    oracle =
        std::make_unique<verify::ModelReference>(facts, [this](core::Finding f) { found.push_back(std::move(f)); });
  }
  void send(EventKind kind, core::RankId rank, int64_t step, int64_t req, std::vector<int64_t> ints,
            int64_t value = -1) {
    verify::deliver(*oracle, events.make(kind, rank, step, req, std::move(ints), value));
  }
  // What `rank` computes for the rows at positions [first, first + n), per the model.
  std::vector<int64_t> output(core::RankId rank, size_t first, size_t n) {
    const int layers = engine::stage_layers(model, 2, rank).last;
    std::vector<int64_t> v{layers, 0, model.lanes};
    for (size_t p = first; p < first + n; ++p) {
      const auto x = truth.lanes(p, layers);
      v.insert(v.end(), {static_cast<int64_t>(p), truth.context(p),
                         static_cast<int64_t>(core::fnv1a_words(x.data(), x.size()))});
    }
    return v;
  }
  // A step of request `req`: both stages embed `ids` from `first`; both compute; rank 1 samples.
  void step(int64_t s, int64_t req, size_t first, const std::vector<int64_t>& ids,
            const std::vector<int64_t>& sampled) {
    std::vector<int64_t> in{static_cast<int64_t>(first)};
    in.insert(in.end(), ids.begin(), ids.end());
    for (size_t i = 0; i < ids.size(); ++i) truth.set(first + i, static_cast<int32_t>(ids[i]));
    send(EventKind::inputs_built, 0, s, req, in, first > 0 ? 1 : 0);
    send(EventKind::stage_output, 0, s, req, output(0, first, ids.size()));
    send(EventKind::inputs_built, 1, s, req, in, first > 0 ? 1 : 0);
    send(EventKind::stage_output, 1, s, req, output(1, first, ids.size()));
    send(EventKind::tokens_sampled, 1, s, req, sampled);
  }
};

TEST(ModelReference, ActivationsAndGreedySamplesOfTheModelPass) {
  OracleFixture fx;
  const std::vector<int64_t> prompt{5, 9, 14, 3};
  fx.send(EventKind::request_scheduled, -1, 0, 7, {4, 4, 0, 5, 9, 14, 3}, 0);
  for (size_t i = 0; i < prompt.size(); ++i) fx.truth.set(i, static_cast<int32_t>(prompt[i]));
  const int64_t first = fx.truth.greedy(3);
  fx.step(0, 7, 0, prompt, {first});
  // Decode: the bonus token and two drafts, the first the model's own token (accepted), the
  // second not (rejected): the sampler emits the model's tokens at rows 0 and 1.
  fx.truth.set(4, static_cast<int32_t>(first));
  const int64_t g4 = fx.truth.greedy(4);
  fx.truth.set(5, static_cast<int32_t>(g4));
  const int64_t g5 = fx.truth.greedy(5);
  const int64_t wrong_draft = (g5 + 1) % fx.model.vocab;
  fx.step(2, 7, 4, {first, g4, wrong_draft}, {g4, g5});
  EXPECT_TRUE(fx.found.empty()) << fx.found.front().summary;
}

TEST(ModelReference, AWrongDeepLaneOnTheLastStageIsBlamedOnItsOwnLayers) {
  OracleFixture fx;
  fx.send(EventKind::request_scheduled, -1, 0, -2, {3, 3, 0, 1, 1, 1}, 0);  // a warmup request
  fx.send(EventKind::inputs_built, 0, 0, -2, {0, 1, 1, 1}, 0);
  for (size_t p = 0; p < 3; ++p) fx.truth.set(p, 1);
  fx.send(EventKind::stage_output, 0, 0, -2, fx.output(0, 0, 3));
  std::vector<int64_t> out = fx.output(1, 0, 3);
  out[3 + 3 * 1 + 2] ^= 1;  // row 1's digest
  fx.send(EventKind::stage_output, 1, 0, -2, out);
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, core::Verdict::output_divergence);
  EXPECT_EQ(core::to_string(f.kind), "stage-output");
  EXPECT_EQ(f.engine_step, 0);
  EXPECT_NE(f.summary.find("rank1 (stage 1) computes request -2 at position 1 (engine step 0)"), std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("deep lanes 0..7 after layer 4 differ"), std::string::npos) << f.summary;
  ASSERT_GE(f.details.size(), 2u);
  EXPECT_NE(f.details[0].find("positions 0..0 agree: position 1 is the first that differs"), std::string::npos)
      << f.details[0];
  EXPECT_NE(f.details[1].find("stage 0 sent activations that agree with the model at this step (after layer 2): the "
                              "difference arose on stage 1"),
            std::string::npos)
      << f.details[1];
}

TEST(ModelReference, AWrongContextLaneOnStageZeroPointsAtItsSlots) {
  OracleFixture fx;
  fx.send(EventKind::request_scheduled, -1, 0, 7, {2, 2, 0, 4, 6}, 0);
  fx.send(EventKind::inputs_built, 0, 0, 7, {0, 4, 6}, 0);
  fx.truth.set(0, 4);
  fx.truth.set(1, 6);
  std::vector<int64_t> out = fx.output(0, 0, 2);
  out[3 + 1] += 1;  // row 0's context lane
  fx.send(EventKind::stage_output, 0, 0, 7, out);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_NE(fx.found[0].summary.find("rank0 (stage 0) computes request 7 at position 0"), std::string::npos);
  EXPECT_NE(fx.found[0].details[1].find("only the context lane differs"), std::string::npos) << fx.found[0].details[1];
}

TEST(ModelReference, AGreedySampleOtherThanTheModelsIsReportedAndATemperatureOneIsNot) {
  for (int64_t req : {7, 9}) {  // 9 is sampled with temperature
    OracleFixture fx;
    fx.send(EventKind::request_scheduled, -1, 0, req, {2, 2, 0, 4, 6}, 0);
    fx.truth.set(0, 4);
    fx.truth.set(1, 6);
    const int64_t wrong = (fx.truth.greedy(1) + 1) % fx.model.vocab;
    fx.step(0, req, 0, {4, 6}, {wrong});
    if (req == 9) {
      EXPECT_TRUE(fx.found.empty());
      continue;
    }
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(core::to_string(fx.found[0].kind), "greedy-sample");
    EXPECT_NE(fx.found[0].summary.find(fmt::format("rank1 samples [{}] for greedy request 7 at engine step 0", wrong)),
              std::string::npos)
        << fx.found[0].summary;
    EXPECT_NE(fx.found[0].details[1].find("the last stage's activations for every row agree with the model"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ppspec::testing
