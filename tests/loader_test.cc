// Bad input gets a clear error: the file, the line, and what was expected. Never a crash.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/dtype.h"
#include "scenario/program_loader.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

const char* kGood = R"(kind = "program"
ranks = 2
streams = ["main", "side"]

[runtime]
module_loading = "lazy"

[[communicator]]
name = "c"
ranks = [0, 1]

[rank.0]
ops = [
  { op = "send", comm = "c", peer = 1, dtype = "i32", count = 4, stream = "side", label = "x" },
  { op = "stream_sync", stream = "side" },
]

[rank.1]
ops = [
  { op = "recv", comm = "c", peer = 0, dtype = "i32", count = 4, stream = "side", label = "x" },
  { op = "stream_sync", stream = "side" },
]

[expect]
verdict = "pass"
)";

// Replaces the first occurrence of `from` in the good program.
std::string with(const std::string& from, const std::string& to) { return replaced(kGood, from, to); }

class BadInput : public ::testing::TestWithParam<Bad> {};

TEST_P(BadInput, IsRejectedWithFileLineAndReason) { expect_rejected(GetParam(), scenario::parse_program); }

INSTANTIATE_TEST_SUITE_P(
    Loader, BadInput,
    ::testing::Values(
        Bad{"syntax", with("ranks = 2", "ranks = = 2"), 2, "TOML syntax"},
        Bad{"unknown_top_key", with("ranks = 2", "ranks = 2\nrankz = 3"), 3, "unknown key 'rankz'"},
        Bad{"unknown_runtime_key", with("module_loading = \"lazy\"", "module_loading = \"lazy\"\neger_bytes = 4"), 7,
            "unknown key 'eger_bytes'"},
        Bad{"bad_loading_mode", with("\"lazy\"", "\"lazzy\""), 6, "'lazzy' is not one of: eager, lazy, jit"},
        Bad{"wrong_type", with("ranks = 2", "ranks = \"two\""), 2, "expected an integer, found a string"},
        Bad{"out_of_range", with("ranks = 2", "ranks = 0"), 2, "out of range"},
        Bad{"unknown_op", with("op = \"send\"", "op = \"sned\""), 14, "'sned' is not one of"},
        Bad{"unknown_op_key", with("label = \"x\" },", "label = \"x\", peers = 2 },"), 14, "unknown key 'peers'"},
        Bad{"unknown_comm", with("comm = \"c\", peer = 1", "comm = \"d\", peer = 1"), 14, "unknown communicator 'd'"},
        Bad{"unknown_stream", with("stream = \"side\", label", "stream = \"sidee\", label"), 14,
            "unknown stream 'sidee'"},
        Bad{"peer_out_of_range", with("peer = 1", "peer = 5"), 14, "out of range [0, 1]"},
        Bad{"comm_rank_out_of_range", with("ranks = [0, 1]", "ranks = [0, 7]"), 10, "ranks must be integers in [0, 1]"},
        Bad{"bad_dtype", with("dtype = \"i32\"", "dtype = \"integer\""), 14, "'integer' is not one of: i8"},
        Bad{"peer_and_dst", with("peer = 1,", "peer = 1, dst = 1,"), 14,
            "'peer' and 'dst' name the same rank: give one"},
        Bad{"negative_count", with("count = 4", "count = -4"), 14, "out of range"},
        Bad{"missing_rank", with("ranks = 2", "ranks = 3"), 12, "rank 2 has no [rank.2] table"},
        Bad{"rank_out_of_range", with("[rank.1]", "[rank.9]"), 18, "expected a rank number in [0, 1]"},
        Bad{"bad_verdict", with("verdict = \"pass\"", "verdict = \"passed\""), 25, "'passed' is not one of: pass"},
        Bad{"missing_kind", with("kind = \"program\"", ""), 1, "'kind'"},
        Bad{"op_not_a_table",
            with("{ op = \"stream_sync\", stream = \"side\" },\n]\n\n[rank.1]", "\"stream_sync\",\n]\n\n[rank.1]"), 15,
            "expected an inline table"},
        Bad{"unrecorded_event",
            with("{ op = \"stream_sync\", stream = \"side\" },", "{ op = \"event_sync\", event = \"e\" },"), 15,
            "event 'e' is never recorded"},
        Bad{"unbalanced_group", with("{ op = \"stream_sync\", stream = \"side\" },", "{ op = \"group_start\" },"), 12,
            "group_start without group_end"},
        Bad{"sync_inside_group", with("  { op = \"send\"", "  { op = \"group_start\" },\n  { op = \"send\""), 16,
            "inside a group"},
        Bad{"bad_strategy", with("[expect]", "[explore]\nstrategy = \"dfs\"\n[expect]"), 25,
            "'dfs' is not \"random\" or \"pct:DEPTH\" (DEPTH 1..64; optionally pct:DEPTH:HORIZON"},
        Bad{"duplicate_comm", with("[[communicator]]", "[[communicator]]\nname = \"c\"\nranks = [0]\n[[communicator]]"),
            12, "declared twice"}),
    [](const ::testing::TestParamInfo<Bad>& param_info) { return param_info.param.name; });

TEST(Loader, GoodProgramLoads) {
  const program::Program p = scenario::parse_program(kGood, "good.toml");
  EXPECT_EQ(p.num_ranks, 2);
  ASSERT_EQ(p.ranks.size(), 2u);
  ASSERT_EQ(p.ranks[0].size(), 1u);
  ASSERT_EQ(p.ranks[0][0].ops.size(), 2u);
  EXPECT_EQ(p.ranks[0][0].ops[0].origin, "good.toml:14");
  EXPECT_EQ(p.ranks[0][0].ops[0].peer, 1);
  EXPECT_EQ(p.config.module_loading, core::ModuleLoading::lazy);
  EXPECT_EQ(p.expect.verdict, core::Verdict::pass);
}

// torch's spellings are aliases: dtypes (float32, torch.int64, half) and src / dst for peers and roots.
TEST(Loader, TorchSpellingsAreAliases) {
  const program::Program p =
      scenario::parse_program(replaced(replaced(kGood, "peer = 1, dtype = \"i32\"", "dst = 1, dtype = \"torch.int64\""),
                                       "peer = 0, dtype = \"i32\"", "src = 0, dtype = \"int64\""),
                              "aliases.toml");
  EXPECT_EQ(p.ranks[0][0].ops[0].peer, 1);
  EXPECT_EQ(p.ranks[0][0].ops[0].dtype, core::Dtype::i64);
  EXPECT_EQ(p.ranks[1][0].ops[0].peer, 0);
  EXPECT_EQ(p.ranks[1][0].ops[0].dtype, core::Dtype::i64);
  for (const char* name : {"float32", "float", "bfloat16", "half", "uint8"})
    EXPECT_TRUE(core::parse_dtype_or_torch(name).has_value()) << name;
  EXPECT_FALSE(core::parse_dtype_or_torch("complex64").has_value());
}

// No [expect]: explore mode. The scenario runs to show what it does; a pass is as expected.
TEST(Loader, ANoExpectScenarioIsExploredAndAPassIsAsExpected) {
  const program::Program p =
      scenario::parse_program(replaced(kGood, "[expect]\nverdict = \"pass\"", ""), "explore.toml");
  EXPECT_FALSE(p.expect.given);
  EXPECT_EQ(p.expect.verdict, core::Verdict::pass);
}

TEST(Loader, MissingFileIsAnInputError) {
  EXPECT_THROW((void)scenario::load_program_file("/nonexistent/x.toml"), core::InputError);
}

}  // namespace
}  // namespace ppspec::testing
