// `ppspec export --perfetto`: valid Chrome trace-event JSON with a process per rank, a track per
// stream (or process group), slices, flow arrows that pair up, and findings as instants; for
// simulator traces and Flight Recorder dumps; bad input is exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tools/export_command.h"
#include "tools/run_command.h"
#include "traces/flight_recorder.h"
#include "traces/pickle.h"
#include "traces/pickle_writer.h"
#include "verify/dumps/flight_recorder_check.h"
#include "tests/command_test.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json exported(const std::string& input, int expect_code = 0) {
  const fs::path out = scratch_path("ppspec_export.json");
  fs::remove(out);
  std::ostringstream o, e;
  tools::ExportArgs x;
  x.input = input;
  x.out = out.string();
  EXPECT_EQ(tools::export_command(x, o, e), expect_code) << e.str();
  if (expect_code != 0) return Json();
  std::ifstream in(out);
  return Json::parse(in);
}

// The structure every exported file must have.
void expect_valid(const Json& j, std::set<std::string> processes, std::set<std::string> threads) {
  ASSERT_TRUE(j.contains("traceEvents") && j.at("traceEvents").is_array());
  std::map<int64_t, int> flows;
  for (const Json& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.contains("pid"));
    if (ph == "M") {
      (e.at("name") == "process_name" ? processes : threads).erase(e.at("args").at("name").get<std::string>());
    } else if (ph == "X") {
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
      EXPECT_GT(e.at("dur").get<double>(), 0.0);
      EXPECT_FALSE(e.at("name").get<std::string>().empty());
    } else if (ph == "s" || ph == "f") {
      flows[e.at("id").get<int64_t>()] += ph == "s" ? 1 : 10;
    }
  }
  EXPECT_TRUE(processes.empty()) << "no process named " << *processes.begin();
  EXPECT_TRUE(threads.empty()) << "no track named " << *threads.begin();
  EXPECT_FALSE(flows.empty());
  for (const auto& [id, n] : flows) EXPECT_EQ(n, 11) << "flow " << id << " lacks an end";
}

// A scenario's simulated run, its trace written to TRACE (the run gives the verdict it expects).
void simulated(const std::string& scenario, const fs::path& trace) {
  std::ostringstream o, e;
  tools::RunArgs a;
  a.files = {kSource + "/scenarios/" + scenario};
  a.trace = trace.string();
  ASSERT_EQ(tools::run_command(a, o, e), 0) << e.str();
}

TEST(Export, ASimulatorTraceBecomesRanksStreamsSlicesAndPairings) {
  const fs::path trace = scratch_path("ppspec_export_serving.jsonl");
  simulated("serving/pp2_tp1_k5.toml", trace);
  const Json j = exported(trace.string());
  expect_valid(j, {"rank0", "rank1"}, {"rank0.main", "rank0.side", "rank1.main", "rank1.side"});
  std::set<std::string> cats;
  for (const Json& ev : j.at("traceEvents"))
    if (ev.contains("cat")) cats.insert(ev.at("cat").get<std::string>());
  EXPECT_TRUE(cats.count("kernel") && cats.count("communication"));
}

TEST(Export, FlightRecorderDumpsWithTheirRootCauseAsAnInstant) {
  const Json j = exported(kSource + "/traces/corpus/flight-recorder/double_post");
  expect_valid(j, {"rank0", "rank1"}, {"pg 1", "pg 0 p2p"});
  int instants = 0;
  for (const Json& e : j.at("traceEvents"))
    if (e.at("ph") == "i") {
      ++instants;
      EXPECT_EQ(e.at("name"), "fifo-misalignment (collective-mismatch)");
      EXPECT_NE(e.at("args").at("summary").get<std::string>().find("rank 1 posts an extra broadcast"),
                std::string::npos);
    }
  EXPECT_EQ(instants, 1);
}

// A GPU hang dump from 2 H200s (traces/corpus/gpu/): the operations still posted and the host
// threads stuck inside their calls when the watchdog fired.
TEST(Export, AGpuHangDumpShowsWhatWasStuck) {
  const Json j = exported(kSource + "/traces/corpus/gpu/lazy_load_deadlock_hang_dump.jsonl");
  std::set<std::string> tracks, names;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") == "M") tracks.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X" || e.at("ph") == "i") names.insert(e.at("name").get<std::string>());
  }
  EXPECT_TRUE(tracks.count("rank0.host") && tracks.count("rank1.host"));
  EXPECT_TRUE(names.count("hang (watchdog)"));
  EXPECT_TRUE(names.count("recv i32[256] from rank1 'feedback@step7' (not completed)"));
}

TEST(Export, BadInputIsExitTwo) {
  const fs::path bad = scratch_path("ppspec_export_bad.jsonl");
  std::ofstream(bad) << "not a trace\n";
  exported(bad.string(), 2);
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// A simulator run as Flight Recorder dumps: PyTorch's names and numbering, the same in JSON and
// pickle, and `check` of them names the culprit the simulator named.
TEST(ExportFlightRecorder, ADoublePostRunBecomesDumpsWhoseCheckNamesTheSimulatorsCulprit) {
  const fs::path trace = scratch_path("ppspec_export_fr.jsonl");
  const fs::path dir = scratch_path("ppspec_export_fr");
  fs::remove_all(dir);
  std::ostringstream o, e;
  tools::RunArgs a;
  a.files = {kSource + "/scenarios/programs/double_post_broadcast.toml"};
  a.trace = trace.string();
  a.json = true;
  ASSERT_EQ(tools::run_command(a, o, e), 0) << e.str();
  const Json sim = Json::parse(o.str()).at(0).at("findings").at(0).at("culprit");
  std::ostringstream o2, e2;
  tools::ExportArgs x;
  x.input = trace.string();
  x.out = dir.string();
  x.flight_recorder = true;
  ASSERT_EQ(tools::export_command(x, o2, e2), 0) << e2.str();
  for (const char* sub : {"json/nccl_trace_rank_0.json", "json/nccl_trace_rank_1.json", "pickle/nccl_trace_rank_0",
                          "pickle/nccl_trace_rank_1"})
    EXPECT_TRUE(fs::is_regular_file(dir / sub)) << sub;
  const auto json = traces::read_fr_dir((dir / "json").string()).dumps;
  const auto pickle = traces::read_fr_dir((dir / "pickle").string()).dumps;
  ASSERT_EQ(json.size(), 2u);
  ASSERT_EQ(json[1].entries.size(), pickle[1].entries.size());
  EXPECT_EQ(json[1].groups.at("0").desc, "pp_broadcast");
  EXPECT_EQ(json[1].entries.back().profiling_name, "nccl:broadcast");
  EXPECT_EQ(json[1].entries.back().collective_seq_id, 3) << "PyTorch numbers a group's collectives from 1";
  EXPECT_FALSE(pickle[1].entries.back().frames().empty()) << "the pickle carries the call's frame";
  const core::RunResult r = verify::check_flight_recorder(json);
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  // Without labels, two steps of history cannot tell a double post from a skipped call on the other
  // side: check names the simulator's culprit or none, at the same place.
  const core::Culprit& c = r.findings[0].culprit;
  EXPECT_TRUE(c.rank == -1 || c.rank == sim.at("rank").get<int>()) << r.findings[0].summary;
  EXPECT_EQ(r.findings[0].sites.at(0).cseq, sim.at("position").get<int64_t>() + 1) << r.findings[0].summary;
}

// PyTorch's settings change what its dumps hold: a ring of the last N records, the Gloo form (no
// p2p, no states, a placeholder group table), dumps taken while the job runs.
TEST(ExportFlightRecorder, PyTorchsSettingsShapeTheDumps) {
  const fs::path trace = scratch_path("ppspec_export_fr_settings.jsonl");
  simulated("programs/double_post_broadcast.toml", trace);
  auto written = [&](const std::function<void(traces::FrWriteOptions&)>& set) {
    const fs::path dir = scratch_path("ppspec_export_fr_settings");
    fs::remove_all(dir);
    tools::ExportArgs x;
    x.input = trace.string();
    x.out = dir.string();
    x.flight_recorder = true;
    set(x.fr);
    std::ostringstream o2, e2;
    EXPECT_EQ(tools::export_command(x, o2, e2), 0) << e2.str();
    return traces::read_fr_dir((dir / "json").string()).dumps;
  };
  const auto all = written([](traces::FrWriteOptions&) {});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].entries.front().state, traces::FrState::completed)
      << "no `started` without TORCH_NCCL_ENABLE_TIMING";
  const auto ring = written([](traces::FrWriteOptions& f) { f.buffer = 2; });
  EXPECT_EQ(ring[1].entries.size(), 2u);
  EXPECT_EQ(ring[1].entries.back().record_id, all[1].entries.back().record_id) << "a ring keeps the last records";
  const auto gloo = written([](traces::FrWriteOptions& f) { f.backend = traces::FrBackend::gloo; });
  EXPECT_TRUE(gloo[0].placeholder_table);
  EXPECT_FALSE(gloo[0].progress_recorded);
  const auto early = written([](traces::FrWriteOptions& f) { f.at = 1; });
  EXPECT_LT(early[1].entries.size(), all[1].entries.size())
      << "a dump taken at the start holds what was posted by then";
  tools::ExportArgs bad;
  bad.input = trace.string();
  bad.out = scratch_path("ppspec_export_fr_bad").string();
  bad.flight_recorder = true;
  bad.fr.skew = 5;
  std::ostringstream o3, e3;
  EXPECT_EQ(tools::export_command(bad, o3, e3), 2);
  EXPECT_NE(e3.str().find("--fr-skew"), std::string::npos) << e3.str();
}

TEST(ExportFlightRecorder, PicklesReadBackAsTheValuesWritten) {
  const Json v =
      Json::parse(R"({"a": [1, -2, 3000000000, -9000000000000000000, 1.5, true, false, null, "x"], "b": {}, "c": []})");
  EXPECT_EQ(traces::unpickle(traces::pickle(v), "v"), v);
}

TEST(ExportFlightRecorder, AFolderOrATraceWithoutCommunicatorsIsExitTwo) {
  std::ostringstream o, e;
  tools::ExportArgs x;
  x.input = kSource + "/traces/corpus/flight-recorder/clean";
  x.out = scratch_path("ppspec_export_fr_bad").string();
  x.flight_recorder = true;
  EXPECT_EQ(tools::export_command(x, o, e), 2);
  EXPECT_NE(e.str().find("exports a ppspec trace"), std::string::npos) << e.str();
}

}  // namespace
}  // namespace ppspec::testing
