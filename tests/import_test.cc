// `ppspec import`: real Flight Recorder dumps (2 x H200, and the probes made from them) become
// program scenarios whose simulated run gives the verdict `ppspec check` gives on the dumps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "verify/fidelity/import_differential.h"
#include "scenario/importer/fr_import.h"
#include "scenario/program_loader.h"
#include "program/runner.h"
#include "tests/command_test.h"
#include "tests/fr_dumps.h"
#include "tests/scratch.h"
#include "tools/import_command.h"
#include "traces/flight_recorder.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::testing {
namespace {

const std::string kCorpus = kSource + "/traces/corpus/";

Out import(const std::vector<std::string>& inputs, const std::string& out_file, bool force = true) {
  std::ostringstream out, err;
  tools::ImportArgs args;
  args.inputs = inputs;
  args.out = out_file;
  args.force = force;
  const int code = tools::import_command(args, out, err);
  return Out{code, out.str(), err.str()};
}

std::string scenario_path(const std::string& name) { return scratch_path("import_" + name + ".toml").string(); }

struct Case {
  const char* dumps;
  const char* verdict_class;  // fidelity::fr_class: pass, misaligned, unmatched, cycle
};

std::string class_of(const core::RunResult& r) {
  return fidelity::fr_class(r.findings.empty() ? nullptr : &r.findings.front(), r.verdict);
}

// Every recorded job whose failure lies in its communication order: the imported scenario, written
// and read back, runs to the dumps' verdict.
TEST(Import, EveryRecordedJobsScenarioRunsToTheVerdictOfItsDumps) {
  const Case cases[] = {{"flight-recorder/clean/json", "pass"},
                        {"flight-recorder/clean/pickle", "pass"},
                        {"flight-recorder/double_post/pickle", "misaligned"},
                        {"flight-recorder/double_post/json", "misaligned"},
                        {"flight-recorder/size_mismatch/json", "misaligned"},
                        {"flight-recorder-probes/extra_send/json", "unmatched"},
                        {"flight-recorder-probes/missing_recv/json", "unmatched"},
                        {"flight-recorder-probes/rank1_never_joins/json", "unmatched"},
                        {"flight-recorder-probes/subgroup_p2p/json", "misaligned"},
                        {"flight-recorder-probes/common_size/json", "misaligned"},
                        {"flight-recorder-probes/cross_group_cycle/json", "cycle"},
                        {"flight-recorder-probes/four_rank_tp_skip/json", "unmatched"},
                        {"flight-recorder-probes/default_names/json", "pass"},
                        // PyTorch 2.11 on an H100: barrier, _all_gather_base, _reduce_scatter_base, reduce, gather,
                        // all_to_all of lists, coalesced and batched calls.
                        {"flight-recorder/misc_clean/json", "pass"},
                        {"flight-recorder/rs_coalesced_clean/json", "pass"},
                        {"flight-recorder/rs_coalesced_short/json", "misaligned"},
                        {"flight-recorder/allgather_uneven_clean/json", "pass"},
                        {"flight-recorder/batch_skip_recv/json", "unmatched"},
                        {"flight-recorder/sync_skip_recv/json", "unmatched"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dumps);
    const std::string file = scenario_path(std::filesystem::path(c.dumps).parent_path().filename().string());
    const Out o = import({kCorpus + c.dumps}, file);
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find(fmt::format("the same verdict ({})", c.verdict_class)), std::string::npos) << o.out;
    const program::Program p = scenario::load_program_file(file);
    const core::RunResult r = program::run_on_sim(p, sim::RunConfig{});
    EXPECT_EQ(class_of(r), c.verdict_class) << (r.findings.empty() ? "" : r.findings.front().summary);
    EXPECT_EQ(r.verdict, p.expect.verdict);
    EXPECT_EQ(class_of(verify::check_flight_recorder(traces::read_fr_dir(kCorpus + c.dumps).dumps)), c.verdict_class);
  }
}

TEST(Import, AHangNoMisalignmentExplainsIsSaidNotToFollowFromTheOrder) {
  const Out o = import({kCorpus + "flight-recorder-probes/hang_aligned/json"}, scenario_path("hang_aligned"));
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("check of the dumps: hang"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("the verdicts differ"), std::string::npos) << o.out;
}

TEST(Import, TheScenarioKeepsEachRanksRecordOrderAndSaysWhatItAssumed) {
  const traces::FrDumpSet set = traces::read_fr_dir(kCorpus + "flight-recorder/double_post/pickle");
  const importer::Imported im = importer::import_flight_recorder(set, "double-post");
  const program::Program& p = im.program;
  ASSERT_EQ(p.num_ranks, 2);
  ASSERT_EQ(p.comms.size(), 2u);
  EXPECT_EQ(im.operations, 49u);  // 24 on rank 0, 25 on rank 1 (the extra broadcast)
  const std::vector<program::ProgramOp>& rank1 = p.ranks[1][0].ops;
  // Step 0 on rank 1: the activations' receive, then sampled, counts, drafts from the last stage.
  ASSERT_GE(rank1.size(), 4u);
  EXPECT_EQ(rank1[0].type, program::OpType::recv);
  EXPECT_EQ(rank1[0].peer, 0);
  EXPECT_EQ(rank1[1].type, program::OpType::broadcast);
  EXPECT_EQ(rank1[1].dtype, core::Dtype::i64);
  EXPECT_EQ(rank1[1].count, 24);  // [4, 6]
  EXPECT_EQ(rank1[2].dtype, core::Dtype::i32);
  EXPECT_EQ(rank1.back().type, program::OpType::stream_sync);
  EXPECT_NE(rank1[1].note.find("record"), std::string::npos);
  bool roots_said = false;
  for (const std::string& n : im.notes) roots_said = roots_said || n.find("broadcast roots") != std::string::npos;
  EXPECT_TRUE(roots_said);
}

// Rank 0 calls pp's all_reduce, then tp's; rank 1 the other way round, and all four complete: so
// rank 0's tp call did not wait for its pp call, and its dump shows it (it completed first). The
// import puts it on a stream of its own; on one stream the scenario would deadlock where the job did
// not. Rank 1's calls completed in its record order and stay on one stream.
TEST(Import, ACallTheDumpsShowDidNotWaitGoesOnAStreamOfItsOwn) {
  FrDumps d(2);
  d.group("0", "pp", {0, 1});
  d.group("1", "tp", {0, 1});
  d.collective(0, "0", "all_reduce", {8}, "Float", "completed");
  d.collective(0, "1", "all_reduce", {8}, "Float", "completed");
  d.collective(1, "1", "all_reduce", {8}, "Float", "completed");
  d.collective(1, "0", "all_reduce", {8}, "Float", "completed");
  d.entry(0, 0)["time_discovered_completed_ns"] = 2000;  // pp, both ranks
  d.entry(1, 1)["time_discovered_completed_ns"] = 2000;
  d.entry(0, 1)["time_discovered_completed_ns"] = 1000;  // tp, both ranks
  d.entry(1, 0)["time_discovered_completed_ns"] = 1000;
  const importer::Imported im =
      importer::import_flight_recorder(traces::read_fr_dir(d.write("import_streams").string()), "streams");
  EXPECT_EQ(im.program.streams, (std::vector<std::string>{"s0", "s1"}));
  EXPECT_EQ(im.program.ranks[0][0].ops[0].stream, "s0");
  EXPECT_EQ(im.program.ranks[0][0].ops[1].stream, "s1");
  EXPECT_EQ(im.program.ranks[1][0].ops[0].stream, "s0");
  EXPECT_EQ(im.program.ranks[1][0].ops[1].stream, "s0");
  EXPECT_EQ(program::run_on_sim(im.program, sim::RunConfig{}).verdict, core::Verdict::pass);

  // The same calls, where rank 0's tp call completed after its pp call: nothing says it did not wait.
  d.entry(0, 1)["time_discovered_completed_ns"] = 3000;
  const importer::Imported serial =
      importer::import_flight_recorder(traces::read_fr_dir(d.write("import_serial").string()), "serial");
  EXPECT_EQ(serial.program.streams, (std::vector<std::string>{"s0"}));
}

TEST(Import, CallSitesLabelACollectiveOnlyWhereEveryMemberAgrees) {
  const traces::FrDumpSet set = traces::read_fr_dir(kCorpus + "flight-recorder/clean/pickle");
  const importer::Imported im = importer::import_flight_recorder(set, "clean");
  size_t labelled = 0;
  for (const auto& threads : im.program.ranks)
    for (const program::ProgramOp& op : threads[0].ops) {
      if (op.label.empty()) continue;
      ++labelled;
      EXPECT_FALSE(program::is_p2p_op(op.type)) << op.label;
      EXPECT_NE(op.label.find(".py:"), std::string::npos) << op.label;
    }
  EXPECT_EQ(labelled, 36u);  // 18 broadcasts on each rank, every one called from one place
}

TEST(Import, BadInputIsExitTwoSayingWhy) {
  FrDumps unsupported(2);
  unsupported.group("0", "default_pg", {0, 1});
  for (int r = 0; r < 2; ++r) unsupported.collective(r, "0", "custom_collective", {8}, "Float", "completed");
  Out o = import({unsupported.write("import_custom").string()}, scenario_path("custom"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("record 0: nccl:custom_collective has no counterpart"), std::string::npos) << o.err;
  // An MoE layer's uneven splits: what each peer got is not in the dumps.
  o = import({kCorpus + "flight-recorder/a2a_uneven_clean/json"}, scenario_path("a2a_uneven"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("an all_to_all of uneven splits"), std::string::npos) << o.err;

  FrDumps wrapped(2);
  wrapped.group("0", "default_pg", {0, 1});
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 2; ++r) wrapped.collective(r, "0", "all_reduce", {8}, "Float", "completed");
  wrapped.wrap(0, 2);
  o = import({wrapped.write("import_wrapped").string()}, scenario_path("wrapped"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("ring buffer dropped its first 2 records"), std::string::npos) << o.err;

  const std::string there = scenario_path("already_there");
  std::ofstream(there) << "mine\n";
  o = import({kCorpus + "flight-recorder/clean/json"}, there, false);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("already exists (--force overwrites it)"), std::string::npos) << o.err;
  EXPECT_EQ((std::stringstream() << std::ifstream(there).rdbuf()).str(), "mine\n");
}

// A ppspec trace (here the simulator's; a GPU run's or a job's NCCL profiler traces alike) imports
// through its Flight Recorder export with the streams it recorded, and runs to that export's verdict.
TEST(Import, ATraceImportsWithItsRecordedStreams) {
  const Case cases[] = {{"double_post_broadcast", "misaligned"},
                        {"first_contact_p2p_inverted", "cycle"},
                        {"comm_order_inversion_serial", "cycle"},
                        {"comm_order_inversion_ok", "pass"},
                        {"ep_all_to_all", "pass"},
                        {"size_mismatch_emulate_partial", "misaligned"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dumps);
    const std::filesystem::path dir = scratch_path(std::string("import_trace_") + c.dumps);
    std::filesystem::create_directories(dir);
    (void)fidelity::compare_on_dumps(kScenarios + c.dumps + ".toml", dir.string());
    const std::string file = (dir / "imported.toml").string();
    const Out o = import({(dir / "trace.jsonl").string()}, file);
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find(fmt::format("the same verdict ({})", c.verdict_class)), std::string::npos) << o.out;
    const program::Program original = scenario::load_program_file(kScenarios + c.dumps + ".toml");
    const program::Program imported = scenario::load_program_file(file);
    for (const std::string& s : imported.streams)
      EXPECT_NE(std::find(original.streams.begin(), original.streams.end(), s), original.streams.end()) << s;
  }
  // A deadlock through an event wait: the dumps hold its communication part alone (a receive whose
  // send the blocked rank never posted), and the import says so.
  const std::filesystem::path dir = scratch_path("import_trace_event_wait_deadlock");
  std::filesystem::create_directories(dir);
  (void)fidelity::compare_on_dumps(kScenarios + "event_wait_deadlock.toml", dir.string());
  const Out host = import({(dir / "trace.jsonl").string()}, (dir / "imported.toml").string());
  EXPECT_EQ(host.code, 0) << host.out << host.err;
  EXPECT_NE(host.out.find("the same hang: the scenario's deadlock runs through a host wait"), std::string::npos)
      << host.out;
  const Out none = import({(scratch_path("import_trace_none.jsonl")).string()}, scenario_path("none"));
  EXPECT_EQ(none.code, 2);
}

// Generated jobs (the Flight Recorder differential's: 2 to 8 ranks, several communicators, one
// disturbance each), simulated, their dumps written as PyTorch writes them, then imported: where
// `check` finds the failure in the communication order (a misalignment, an operation never matched,
// a cycle) or passes, the imported scenario's run gives the same class. A fresh seed of its own.
TEST(Import, GeneratedJobsDumpsImportToTheirCheckVerdict) {
  fidelity::FrDifferentialOptions o;
  o.seed = 7103;
  o.out = scratch_path("import_generated").string();
  size_t in_scope = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    const fidelity::ImportCase c = fidelity::run_import_case(o, i);
    EXPECT_TRUE(c.agree) << c.dumps.file << ": " << c.why << "; check: " << c.dumps.check_summary
                         << "; import: " << c.import_summary;
    in_scope += c.in_scope;
  }
  EXPECT_GE(in_scope, 30u);
}

}  // namespace
}  // namespace ppspec::testing
