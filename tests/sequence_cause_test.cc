// core/sequence_cause: the first root cause of members' disagreeing sequences, and the evidence
// that names the culprit — or none when nothing tells. Each operation is a letter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/sequence_cause.h"

namespace ppspec::testing {
namespace {

class Letters final : public core::Sequences {
 public:
  explicit Letters(std::vector<std::string> l) : lanes_(std::move(l)) {}
  size_t lanes() const override { return lanes_.size(); }
  size_t length(size_t lane) const override { return lanes_[lane].size(); }
  bool same(size_t a, size_t x, size_t b, size_t y) const override { return lanes_[a][x] == lanes_[b][y]; }

 private:
  std::vector<std::string> lanes_;
};

core::SequenceCause cause(std::vector<std::string> lanes) {
  const Letters s(std::move(lanes));
  return core::first_cause(s, std::vector<size_t>(s.lanes(), 0));
}

TEST(SequenceCause, AgreeingLanesHaveNone) {
  EXPECT_EQ(cause({"abcabc", "abcabc"}).kind, core::CauseKind::none);
  EXPECT_EQ(cause({"", ""}).kind, core::CauseKind::none);
}

TEST(SequenceCause, AnExtraOperationBreakingAPatternIsBlamedOnItsLane) {
  const auto c = cause({"abcabcabcabcabc", "abcabcabccabcabc"});
  EXPECT_EQ(c.kind, core::CauseKind::extra);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
  EXPECT_EQ(c.at, (std::vector<size_t>{9, 9}));
  EXPECT_EQ(c.resume, (std::vector<size_t>{9, 10}));
  EXPECT_NE(c.evidence.find("repeating pattern"), std::string::npos) << c.evidence;
}

TEST(SequenceCause, ASkippedOperationBreakingAPatternIsMissing) {
  const auto c = cause({"abcabcabcabcabc", "abcabcabcbcabc"});
  EXPECT_EQ(c.kind, core::CauseKind::missing);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
  EXPECT_EQ(c.resume, (std::vector<size_t>{10, 9}));
}

// A pattern read off a short shared history is no evidence: one lane skipping the odd operation
// leaves it looking like the pattern, and the other like the one that breaks it.
TEST(SequenceCause, APatternOfTooFewRepeatsBlamesNoOne) {
  const auto c = cause({"aaXaa", "aaaa"});
  EXPECT_TRUE(c.culprits.empty()) << c.evidence;
}

TEST(SequenceCause, TheSameOperationTwiceInARowIsTheExtraOne) {
  const auto c = cause({"pqrstu", "pqrrstu"});
  EXPECT_EQ(c.kind, core::CauseKind::extra);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
  EXPECT_EQ(c.evidence, "the same operation twice in a row");
}

TEST(SequenceCause, AShiftNothingExplainsIsSaidToBeAmbiguous) {
  // Lane 0 has one more here: its extra, or lane 1's skip; no pattern, no repeat.
  const auto c = cause({"pqxrstu", "pqrstu"});
  EXPECT_EQ(c.kind, core::CauseKind::shifted);
  EXPECT_EQ(c.ahead, std::vector<size_t>{0});
  EXPECT_TRUE(c.culprits.empty());
  EXPECT_EQ(c.resume, (std::vector<size_t>{3, 2}));
}

TEST(SequenceCause, ADifferentOperationIsToldByThePatternOrByBeingUniqueAmongFour) {
  auto c = cause({"abcabcabcabcabc", "abcabcabcbbcabc"});  // b occurs elsewhere: the pattern tells
  EXPECT_EQ(c.kind, core::CauseKind::differs);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
  c = cause(
      {"pqrsrtrur", "pqzsrtrur", "pqrsrtrur", "pqysrtrur"});  // z and y: neither a majority; y and z unique, r recurs
  EXPECT_TRUE(c.culprits.empty() || c.culprits.size() == 2) << c.evidence;
  // Between two lanes a value seen nowhere else tells nothing: a wrong dtype or size is as often a
  // common one, which leaves the right operation the unique one.
  c = cause({"pqrsrtrur", "pqzsrtrur"});
  EXPECT_EQ(c.kind, core::CauseKind::differs);
  EXPECT_TRUE(c.culprits.empty()) << c.evidence;
  c = cause({"pqrstr", "pqtstr"});  // r and t both occur elsewhere: nothing tells
  EXPECT_EQ(c.kind, core::CauseKind::differs);
  EXPECT_TRUE(c.culprits.empty());
}

TEST(SequenceCause, AmongThreeOrMoreTheOddOneOutIsNamed) {
  auto c = cause({"abcd", "abcd", "abxd", "abcd"});
  EXPECT_EQ(c.kind, core::CauseKind::differs);
  EXPECT_EQ(c.culprits, std::vector<size_t>{2});
  EXPECT_EQ(c.evidence, "the odd one out: every other member agrees");
  c = cause({"abcd", "abd", "abcd"});
  EXPECT_EQ(c.kind, core::CauseKind::missing);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
  c = cause({"abcd", "abxcd", "abcd"});
  EXPECT_EQ(c.kind, core::CauseKind::extra);
  EXPECT_EQ(c.culprits, std::vector<size_t>{1});
}

TEST(SequenceCause, ASurplusAtTheEndNamesTheMinority) {
  auto c = cause({"aaaa", "aaa"});
  EXPECT_EQ(c.kind, core::CauseKind::surplus);
  EXPECT_EQ(c.ahead, std::vector<size_t>{0});
  EXPECT_TRUE(c.culprits.empty()) << "two lanes: an extra or a skip, equal operations cannot tell";
  c = cause({"aaaa", "aaaa", "aaa", "aaaa"});
  EXPECT_EQ(c.kind, core::CauseKind::surplus);
  EXPECT_EQ(c.culprits, std::vector<size_t>{2});
}

TEST(SequenceCause, DisagreementNoSingleChangeExplainsIsUnresolved) {
  const auto c = cause({"abcdefgh", "abxyzwvu", "abqrsmno"});
  EXPECT_EQ(c.kind, core::CauseKind::unresolved);
  EXPECT_EQ(c.at, (std::vector<size_t>{2, 2, 2}));
}

TEST(SequenceCause, TheNextCauseIsFoundFromWhereTheLanesAgreeAgain) {
  const Letters s({"abcabcabcabcabc", "abcabccabcabbcabc"});
  const auto first = core::first_cause(s, std::vector<size_t>{0, 0});
  ASSERT_EQ(first.kind, core::CauseKind::extra);
  const auto second = core::first_cause(s, first.resume);
  EXPECT_EQ(second.kind, core::CauseKind::extra);
  EXPECT_EQ(second.at[1], 12u);
  EXPECT_EQ(core::first_cause(s, second.resume).kind, core::CauseKind::none);
}

}  // namespace
}  // namespace ppspec::testing
