// `ppspec show`: a text timeline around the first finding, for a GPU hang dump and for Flight
// Recorder dumps; --ranks keeps only those columns; a finding that does not exist is exit 2.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/run_command.h"
#include "tools/show_command.h"
#include "tests/scratch.h"
#include "tests/command_test.h"

namespace ppspec::testing {
namespace {

const std::string kCorpus = std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/";

Out show(tools::ShowArgs a) {
  std::ostringstream out, err;
  const int code = tools::show_command(a, out, err);
  return {code, out.str(), err.str()};
}

std::string marked_row(const std::string& out) {
  const auto at = out.find("\n>>");
  return at == std::string::npos ? "" : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

TEST(Show, AHangDumpIsShownAroundTheWatchdogsFinding) {
  const Out r = show({.input = kCorpus + "gpu/lazy_load_deadlock_hang_dump.jsonl", .width = 60});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("hang (watchdog)"), 0u) << r.out;
  EXPECT_NE(marked_row(r.out).find("PENDING op 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("STUCK in cudaStreamSynchronize(rank1.main)"), std::string::npos) << r.out;
  for (const char* column : {"rank0.host", "rank0.side", "rank1.host", "rank1.main"})
    EXPECT_NE(r.out.find(column), std::string::npos);
  const Out one = show({.input = kCorpus + "gpu/lazy_load_deadlock_hang_dump.jsonl", .ranks = {1}});
  EXPECT_EQ(one.out.find("rank0."), std::string::npos) << one.out;
}

TEST(Show, FlightRecorderDumpsAreShownAroundTheRootCause) {
  const Out r = show({.input = kCorpus + "flight-recorder/double_post", .rows = 12});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(marked_row(r.out).find("#10 broadcast [4,5]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#10 broadcast [4,6] scheduled"), std::string::npos) << r.out;
  const Out bad = show({.input = kCorpus + "flight-recorder/double_post", .around = 2});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--around 2: the input has 1 finding(s)"), std::string::npos) << bad.err;
}

// --rows N shows N rows even when the finding is near the end; a cell shows its label first, and
// the columns are as wide as the widest cell shown.
TEST(Show, RowsAreAsManyAsAskedAndLabelsComeFirst) {
  const std::string hang = kCorpus + "gpu/lazy_load_deadlock_hang_dump.jsonl";
  const Out r = show({.input = hang, .rows = 10});
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t table = r.out.find("-\n") + 2;
  const size_t end = r.out.find("\n\n(rows ");
  size_t lines = 0;
  for (size_t i = table; i < end; ++i) lines += r.out[i] == '\n';
  EXPECT_EQ(lines + 1, 10u) << r.out;
  EXPECT_NE(r.out.find("(rows "), std::string::npos);
  EXPECT_NE(r.out.find("'feedback@step7' post recv i32[256] from rank1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("~"), std::string::npos) << "nothing cut at the automatic width: " << r.out;
}

// A serving trace shows its engine's steps, not its kernels' copies, and --step N centres on step N.
TEST(Show, AServingTraceShowsEngineStepsAndStepChoosesOne) {
  const std::string trace = scratch_path("show_serving.jsonl").string();
  std::ostringstream o, e;
  ASSERT_EQ(tools::run_command(
                {.files = {std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp1_k5.toml"}, .trace = trace}, o, e),
            0)
      << o.str() << e.str();
  const Out r = show({.input = trace, .rows = 10, .step = 3});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(marked_row(r.out).find("step 3: "), marked_row(r.out).find("step ")) << r.out;
  EXPECT_NE(marked_row(r.out).find("step 3: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("memcpy_d2h"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("engine"), std::string::npos) << r.out;
  const Out none = show({.input = trace, .step = 100000});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--step 100000: no row of that engine step here"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace ppspec::testing
