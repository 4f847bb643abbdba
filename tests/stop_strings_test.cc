// Stop strings as the front end applies them (engine/stop_strings.h): its windowed search over each
// update's new text agrees with appending the tokens one at a time and searching the whole text
// (verify::stop_cut), whatever the updates' sizes; each of the three upstream defects, put back,
// disagrees with it on a run that holds what it misses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "engine/config.h"
#include "engine/detokenizer.h"
#include "engine/stop_strings.h"
#include "verify/oracles/golden.h"

namespace ppspec::testing {
namespace {

engine::ModelConfig model() {
  engine::ModelConfig m;
  m.vocab = 64;
  m.stop_token = 5;
  return m;
}

// A token of the vocabulary whose text is `piece`.
int64_t token_of(const engine::ModelConfig& m, const std::string& piece) {
  for (int64_t t = 0; t < m.vocab; ++t) {
    std::string text;
    engine::append_token_text(m, t, text);
    if (text == piece) return t;
  }
  ADD_FAILURE() << "no token of the vocabulary decodes to " << piece;
  return 0;
}

struct Returned {
  size_t tokens = 0;
  std::string text;
  int32_t stop = -1;
};

// The front end fed `tokens` in updates of the given sizes (the last update takes what is left).
Returned front_end(const engine::ModelConfig& m, const engine::StopStringRules& rules,
                   const std::vector<int64_t>& tokens, const std::vector<int>& sizes) {
  Returned r;
  size_t at = 0, next = 0;
  while (at < tokens.size()) {
    const size_t n = next < sizes.size() ? std::min<size_t>(sizes[next++], tokens.size() - at) : tokens.size() - at;
    const std::span<const int64_t> output(tokens.data(), at + n);
    const engine::StopMatch match = engine::stop_string_update(m, rules, output, static_cast<int32_t>(n), r.text);
    r.tokens = at + static_cast<size_t>(match.kept);
    at += n;
    if (match.stop >= 0) {
      r.stop = match.stop;
      return r;
    }
  }
  return r;
}

void expect_returned(const Returned& r, int32_t stop, size_t tokens, const std::string& text) {
  EXPECT_EQ(r.stop, stop);
  EXPECT_EQ(r.tokens, tokens);
  EXPECT_EQ(r.text, text);
}

TEST(Detokenizer, EveryTokenDecodesToOneToThreeLettersAndTheStopTokenToNothing) {
  const engine::ModelConfig m = model();
  for (int64_t t = 0; t < m.vocab; ++t) {
    std::string text;
    const int n = engine::append_token_text(m, t, text);
    EXPECT_EQ(n, engine::token_text_length(m, t));
    EXPECT_EQ(static_cast<size_t>(n), text.size());
    if (t == m.stop_token) {
      EXPECT_EQ(n, 0);
      continue;
    }
    EXPECT_GE(n, 1);
    EXPECT_LE(n, engine::kMaxPieceLength);
    EXPECT_EQ(text.find_first_not_of(engine::kTextAlphabet), std::string::npos) << text;
  }
}

// The property: any split of a token sequence into updates, any stop strings, with the stop string
// in the output or not: the front end returns what appending one token at a time returns.
TEST(StopStrings, TheWindowedSearchAgreesWithOneTokenAtATime) {
  const engine::ModelConfig m = model();
  core::Rng rng(core::derive_seed(7, 1));
  int stopped = 0, several_in_one_update = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<std::string> stops(1 + rng.next() % engine::kMaxStopStrings);
    for (std::string& s : stops)
      for (size_t n = 1 + rng.next() % 4; s.size() < n;) s.push_back(engine::kTextAlphabet[rng.next() % 4]);
    std::vector<int64_t> tokens(1 + rng.next() % 24);
    for (int64_t& t : tokens) t = static_cast<int64_t>(rng.next() % m.vocab);
    std::vector<int> sizes(tokens.size());
    for (int& n : sizes) n = 1 + static_cast<int>(rng.next() % 6);
    const bool include = rng.next() % 2 == 0;
    const engine::StopStringRules rules{stops, include};
    const Returned got = front_end(m, rules, tokens, sizes);
    const verify::StopCut want = verify::stop_cut(m, stops, include, tokens);
    ASSERT_EQ(got.stop, want.stop) << "trial " << trial;
    ASSERT_EQ(got.tokens, want.tokens) << "trial " << trial;
    ASSERT_EQ(got.text, want.text) << "trial " << trial;
    stopped += want.stop >= 0;
    several_in_one_update += want.stop >= 0 && sizes[0] > 1;
  }
  EXPECT_GT(stopped, 1000);  // the property was exercised where it matters
  EXPECT_GT(several_in_one_update, 500);
}

// One update of three tokens "c" "ba" "dd": "ba" completes with the second; the third is dropped.
TEST(StopStrings, TheTokensAfterTheStopStringAreDroppedUnlessTheFaultKeepsThem) {
  const engine::ModelConfig m = model();
  const std::vector<int64_t> tokens = {token_of(m, "c"), token_of(m, "ba"), token_of(m, "dd")};
  const std::vector<std::string> stops = {"cb"};
  expect_returned(front_end(m, engine::StopStringRules{stops, false}, tokens, {3}), 0, 2, "");
  engine::StopStringRules faulty{stops, false};
  faulty.keeps_tokens = true;
  // vLLM #47616: the text is cut, the token ids are not.
  expect_returned(front_end(m, faulty, tokens, {3}), 0, 3, "");
}

// "ad" completes before "db" in one update's text "adb": the earliest wins, whatever the order.
TEST(StopStrings, TheEarliestCompletingStopStringWinsUnlessTheFaultTakesTheFirstListed) {
  const engine::ModelConfig m = model();
  const std::vector<int64_t> tokens = {token_of(m, "a"), token_of(m, "d"), token_of(m, "b"), token_of(m, "c")};
  const std::vector<std::string> stops = {"db", "ad"};
  expect_returned(front_end(m, engine::StopStringRules{stops, true}, tokens, {4}), 1, 2, "ad");
  engine::StopStringRules faulty{stops, true};
  faulty.first_listed = true;
  // vLLM #49391: "db" is listed first, and "ad" leaks into the output.
  expect_returned(front_end(m, faulty, tokens, {4}), 0, 3, "adb");
}

// A run of six one-letter tokens "b" "a" "c" "c" "c" "c" with the stop string "ba": the tail window
// (longest + 1 = 3 tokens) sees only "ccc".
TEST(StopStrings, AStopStringEarlyInALongRunIsFoundUnlessTheFaultSearchesOnlyTheTail) {
  const engine::ModelConfig m = model();
  const int64_t c = token_of(m, "c");
  const std::vector<int64_t> tokens = {token_of(m, "b"), token_of(m, "a"), c, c, c, c};
  const std::vector<std::string> stops = {"ba"};
  expect_returned(front_end(m, engine::StopStringRules{stops, false}, tokens, {6}), 0, 2, "");
  engine::StopStringRules faulty{stops, false};
  faulty.tail_window = true;
  expect_returned(front_end(m, faulty, tokens, {6}), -1, 6, "bacccc");  // SGLang #23802
  // One token per update keeps every stop string within the window: the fault needs a long run.
  expect_returned(front_end(m, faulty, tokens, {1, 1, 1, 1, 1, 1}), 0, 2, "");
}

}  // namespace
}  // namespace ppspec::testing
