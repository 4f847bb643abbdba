// PyTorch Flight Recorder dumps (`ppspec check DIR`): the corpus recorded on 2 H200s gives the
// answer its README states, one finding per root cause; edited dumps show a p2p mismatch and a
// missing rank; bad dumps are exit 2 with the file and record.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "tools/check_command.h"
#include "traces/flight_recorder.h"
#include "verify/flight_recorder_check.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kCorpus = std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/flight-recorder/";

core::RunResult check_case(const std::string& name) { return verify::check_flight_recorder(traces::read_fr_dir(kCorpus + name)); }

TEST(FlightRecorder, TheCleanRunIsClean) {
  const core::RunResult r = check_case("clean");
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.stats.pairs, 6u) << "six sends, each paired with its receive";
}

TEST(FlightRecorder, ADoublePostIsOneRootCauseNamingTheExtraBroadcast) {
  const core::RunResult r = check_case("double_post");
  ASSERT_EQ(r.findings.size(), 1u) << "PyTorch's analyzer reports 9; the cause is one";
  const core::Finding& f = r.findings[0];
  EXPECT_EQ(f.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(f.kind, "collective-mismatch");
  EXPECT_NE(f.summary.find("rank1 posts an extra broadcast i64 [4, 5] on pg 1 (its collective_seq_id 10)"), std::string::npos)
      << f.summary;
  ASSERT_GE(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[0].rank, 1) << "the culprit first";
  bool stuck = false;
  for (const std::string& d : f.details) stuck = stuck || d.find("rank0: 15 of 24 operations completed; stuck from pg 1 collective #10") == 0;
  EXPECT_TRUE(stuck);
}

TEST(FlightRecorder, ANarrowBroadcastIsOneRootCauseNamingBothSizes) {
  const core::RunResult r = check_case("size_mismatch");
  ASSERT_EQ(r.findings.size(), 1u) << "PyTorch's analyzer reports 8";
  EXPECT_NE(r.findings[0].summary.find("pg 1 collective_seq_id 10: rank1 posts broadcast i64 [4] where rank0 posts broadcast "
                                       "i64 [4, 6]"),
            std::string::npos)
      << r.findings[0].summary;
  EXPECT_EQ(r.findings[0].sites[0].rank, 1);
}

// The pickles PyTorch's own analyzer reads hold what the JSON dumps hold, record for record.
TEST(FlightRecorder, ThePickleDumpsReadAsTheJsonOnesAndGiveTheSameAnswers) {
  for (const char* c : {"clean", "double_post", "size_mismatch"}) {
    SCOPED_TRACE(c);
    const auto json = traces::read_fr_dir(kCorpus + c + "/json");
    const auto pickle = traces::read_fr_dir(kCorpus + c + "/pickle");
    ASSERT_EQ(json.size(), pickle.size());
    for (size_t r = 0; r < json.size(); ++r) {
      ASSERT_EQ(json[r].entries.size(), pickle[r].entries.size());
      for (size_t i = 0; i < json[r].entries.size(); ++i) {
        const auto& a = json[r].entries[i];
        const auto& b = pickle[r].entries[i];
        EXPECT_EQ(std::tie(a.record_id, a.pg_id, a.collective_seq_id, a.p2p_seq_id, a.profiling_name, a.input_sizes,
                           a.input_dtypes, a.state),
                  std::tie(b.record_id, b.pg_id, b.collective_seq_id, b.p2p_seq_id, b.profiling_name, b.input_sizes,
                           b.input_dtypes, b.state));
      }
      EXPECT_EQ(json[r].groups.size(), pickle[r].groups.size());
    }
    const core::RunResult a = verify::check_flight_recorder(json), b = verify::check_flight_recorder(pickle);
    ASSERT_EQ(a.findings.size(), b.findings.size());
    for (size_t i = 0; i < a.findings.size(); ++i) EXPECT_EQ(a.findings[i].summary, b.findings[i].summary);
  }
}

TEST(FlightRecorder, ATruncatedPickleOrOneThatNamesAClassIsExitTwo) {
  const fs::path dir = fs::temp_directory_path() / "ppspec_fr_bad_pickle";
  std::ifstream in(kCorpus + "clean/pickle/rank_0", std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bytes.substr(0, 500), "pickle byte"},
      {std::string("\x80\x02" "cos\nsystem\n."), "pickle byte 3: opcode 0x63 is not a plain object's"},
  };
  for (const auto& [content, message] : cases) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "rank_0", std::ios::binary) << content;
    std::ostringstream out, err;
    EXPECT_EQ(tools::check_command({.traces = {dir.string()}}, out, err), 2) << out.str();
    EXPECT_NE(err.str().find((dir / "rank_0").string() + ": " + message), std::string::npos) << err.str();
  }
}

// The clean dumps, edited: `edit` changes rank `rank`'s JSON.
fs::path edited(const std::string& name, int rank, const std::function<void(Json&)>& edit) {
  const fs::path dir = fs::temp_directory_path() / ("ppspec_fr_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r : {0, 1}) {
    std::ifstream in(kCorpus + "clean/json/rank_" + std::to_string(r) + ".json");
    Json j = Json::parse(in);
    if (r == rank) edit(j);
    if (!j.is_null()) std::ofstream(dir / ("rank_" + std::to_string(r) + ".json")) << j.dump();
  }
  return dir;
}

TEST(FlightRecorder, AReceiveOfAnotherSizeIsAP2pMismatch) {
  const fs::path dir = edited("p2p", 1, [](Json& j) { j["entries"][4]["input_sizes"] = Json::array({Json::array({4, 32})}); });
  const core::RunResult r = verify::check_flight_recorder(traces::read_fr_dir(dir.string()));
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "p2p-mismatch");
  EXPECT_NE(r.findings[0].summary.find("pg 0: rank0's send #2 to rank1 is send f16 [4, 64], the receive it pairs with is recv "
                                       "f16 [4, 32]"),
            std::string::npos)
      << r.findings[0].summary;
}

TEST(FlightRecorder, AMissingRankIsSaidAndTheRestChecked) {
  const fs::path dir = fs::temp_directory_path() / "ppspec_fr_one_rank";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kCorpus + "clean/json/rank_0.json", dir / "rank_0.json");
  const core::RunResult r = verify::check_flight_recorder(traces::read_fr_dir(dir.string()));
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].summary.find("no dump of rank(s) 1"), std::string::npos) << r.notes[0].summary;
}

TEST(FlightRecorder, BadDumpsAreExitTwoWithTheFileAndRecord) {
  struct Bad {
    const char* name;
    std::function<void(Json&)> edit;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {"version", [](Json& j) { j["version"] = "3.0"; }, "Flight Recorder format version '3.0' is not supported"},
      {"entries", [](Json& j) { j["entries"] = 5; }, "'entries': expected a list"},
      {"state", [](Json& j) { j["entries"][2]["state"] = "lost"; }, "entry 2 (record 2): state 'lost' is not scheduled"},
      {"sizes", [](Json& j) { j["entries"][1]["input_sizes"] = "big"; }, "entry 1: 'input_sizes' has the wrong type"},
      {"peers", [](Json& j) { j["entries"][0]["profiling_name"] = "nccl:send"; }, "a p2p operation 'nccl:send' without its peers"},
      {"ranks", [](Json& j) { j["pg_config"]["1"]["ranks"] = "[0, x]"; }, "pg_config 1: ranks '[0, x]' are not a list"},
      {"mixed", [](Json& j) { j["pg_config"]["1"]["ranks"] = "[0, 1, 2]"; }, "mixed runs in one folder? pg 1 has members [0, 1, 2] here"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    const fs::path dir = edited(std::string("bad_") + b.name, 1, b.edit);
    std::ostringstream out, err;
    EXPECT_EQ(tools::check_command({.traces = {dir.string()}}, out, err), 2) << out.str();
    EXPECT_NE(err.str().find((dir / "rank_1.json").string()), std::string::npos) << err.str();
    EXPECT_NE(err.str().find(b.message), std::string::npos) << err.str();
  }
  // Truncated: not JSON at all.
  const fs::path cut = edited("cut", -1, [](Json&) {});
  std::ofstream(cut / "rank_1.json") << "{\"version\": \"2.10\", \"entries\": [";
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command({.traces = {cut.string()}}, out, err), 2);
  EXPECT_NE(err.str().find("not JSON: a truncated or corrupt Flight Recorder dump"), std::string::npos) << err.str();
  // A folder with no dump.
  const fs::path empty = fs::temp_directory_path() / "ppspec_fr_empty";
  fs::remove_all(empty);
  fs::create_directories(empty / "json");
  std::ostringstream out2, err2;
  EXPECT_EQ(tools::check_command({.traces = {empty.string()}}, out2, err2), 2);
  EXPECT_NE(err2.str().find("no Flight Recorder dump here"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace ppspec::testing
