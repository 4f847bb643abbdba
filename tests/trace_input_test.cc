// `ppspec check` on traces that are not what they claim: wrong types and ranges, truncation, lost
// lines, a recorded verdict the events do not show, a serving trace whose scenario moved or
// changed; and several traces in one command, each read in bounded memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "tools/check_command.h"
#include "tools/run_command.h"
#include "traces/trace_reader.h"
#include "verify/monitors/pairing_checker.h"
#include "tests/command_test.h"
#include "tests/scratch.h"
#include "tools/show_command.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

Out check(tools::CheckArgs args) {
  std::ostringstream out, err;
  const int code = tools::check_command(args, out, err);
  return {code, out.str(), err.str()};
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = scratch_path("ppspec_trace_input_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

const std::string kHeader =
    R"({"ppspec_trace":1,"backend":"gpu","scenario":"t","file":"t.toml","seed":0,"strategy":"hardware"})";
const std::string kSend =
    R"({"seq":0,"t":0,"ev":"op_posted","rank":0,"actor":"rank0.main","comm":"some_communicator_name","op_id":0,"op":"send","dtype":"f32","count":1,"peer":1,"label":"a_label_longer_than_sso_buffer"})";
const std::string kRecv =
    R"({"seq":1,"t":5,"ev":"op_posted","rank":1,"actor":"rank1.main","comm":"some_communicator_name","op_id":1,"op":"recv","dtype":"f32","count":1,"peer":0,"label":"a_label_longer_than_sso_buffer"})";
std::string trailer(const std::string& verdict, int events) {
  return fmt::format(R"({{"ppspec_trace_end":1,"verdict":"{}","steps":0,"sim_time":5,"events":{},"decisions":[]}})",
                     verdict, events);
}

// The use-after-free of the first release: events kept views into a trace that moved when the
// list of traces grew. Every trace is now streamed on its own; names print intact.
TEST(TraceInput, SeveralTracesInOneCheckPrintTheirOwnNames) {
  const fs::path d = temp_dir("two");
  const std::string a = write(d / "a.jsonl", joined({kHeader, kSend, trailer("pass", 1)}));
  const std::string b = write(d / "b.jsonl", joined({kHeader, kSend, trailer("pass", 1)}));
  const std::string c = write(d / "c.jsonl", joined({kHeader, kSend, kRecv, trailer("pass", 2)}));
  const Out r = check({.traces = {a, b, c, a}});
  EXPECT_EQ(r.code, 1) << r.err;
  size_t unmatched = 0;
  for (size_t at = r.out.find("'a_label_longer_than_sso_buffer' on 'some_communicator_name'"); at != std::string::npos;
       at = r.out.find("'a_label_longer_than_sso_buffer' on 'some_communicator_name'", at + 1))
    ++unmatched;
  EXPECT_EQ(unmatched, 3u) << r.out;
  EXPECT_NE(r.out.find("ok   t  " + c), std::string::npos) << r.out;
}

struct BadTrace {
  std::string name;
  std::vector<std::string> lines;
  int line;
  std::string message;
};

TEST(TraceInput, WrongTypesAndRangesAreExitTwoWithTheLine) {
  // A table, one bad trace per line, kept as written:
  // clang-format off
  const std::vector<BadTrace> cases = {
      {"seed as a string", {R"({"ppspec_trace":1,"seed":"x"})"}, 1, "'seed': expected a non-negative integer, found a string"},
      {"scenario as a number", {R"({"ppspec_trace":1,"scenario":5})"}, 1, "'scenario': expected a string, found an integer"},
      {"version as a string", {R"({"ppspec_trace":"1"})"}, 1, "'ppspec_trace': expected an integer"},
      {"unknown header key", {R"({"ppspec_trace":1,"sead":1})"}, 1, "unknown key 'sead'"},
      {"rank past 2^32", {kHeader, R"({"seq":0,"t":0,"ev":"note","rank":4294967297})"}, 2, "'rank': expected an integer in [-1, 1048576], found 4294967297"},
      {"peer 1.9", {kHeader, R"({"seq":0,"t":0,"ev":"op_posted","op":"send","dtype":"f32","count":1,"peer":1.9})"}, 2, "'peer': expected an integer in [-1, 1048576], found a number with a fraction"},
      {"negative count", {kHeader, R"({"seq":0,"t":0,"ev":"op_posted","op":"send","dtype":"f32","count":-3,"peer":1})"}, 2, "'count': expected an integer in [0, 1099511627776], found -3"},
      {"step overflow", {kHeader, R"({"seq":0,"t":0,"ev":"gate","rank":0,"value":0,"step":9223372036854775807})"}, 2, "'step': expected an integer in [-1, 1099511627776]"},
      {"newline in a label", {kHeader, R"({"seq":0,"t":0,"ev":"op_posted","op":"send","dtype":"f32","count":1,"peer":1,"label":"a\nFAIL"})"}, 2, "'label': a string with control character 0x0a"},
      {"unknown event key", {kHeader, R"({"seq":0,"t":0,"ev":"note","rnak":1})"}, 2, "unknown key 'rnak'"},
      {"deep nesting", {kHeader, R"({"seq":0,"ev":"note","ints":[[[[[1]]]]]})"}, 2, "nested too deeply"},
      {"no trailer", {kHeader, kSend}, 2, "ends without its trailer"},
      {"a lost line", {kHeader, kSend, trailer("pass", 2)}, 3, "the trailer counts 2 events, the trace holds 1"},
      {"a line after the trailer", {kHeader, trailer("pass", 0), kSend}, 3, "a line after the trailer"},
      {"an unknown trailer verdict", {kHeader, trailer("fine", 0)}, 2, "'verdict': expected one of: pass,"},
      {"an unknown phase", {kHeader, R"({"seq":0,"t":0,"ev":"warmup_phase","rank":0,"text":"Serving"})"}, 2,
       "'text': 'Serving' is not one of: feedback disabled, preload registered kernels"},
      {"an unknown padding kernel", {kHeader, R"({"seq":0,"t":0,"ev":"padding_rows","rank":0,"text":"embed","value":4})"}, 2,
       "'text': 'embed' is not one of: prepare_inputs, prepare_dflash_inputs, topk_softplus_sqrt"},
      {"an unknown table", {kHeader, R"({"seq":0,"t":0,"ev":"table_bound","rank":0,"text":"embed_tokens","value":4})"}, 2,
       "'text': 'embed_tokens' is not one of: draft.embed_tokens"},
      {"an unknown step kind", {kHeader, R"({"seq":0,"t":0,"ev":"batch_scheduled","text":"prefill","value":4})"}, 2,
       "'text': 'prefill' is not one of: warmup, or no text"},
      {"a request_scheduled without its header", {kHeader, R"({"seq":0,"t":0,"ev":"request_scheduled","req":1,"value":0,"ints":[4,4]})"}, 2,
       "'ints': this request_scheduled event holds 2 integers; its layout is [tokens scheduled, prefill length, req-state index"},
      {"a stage_output with a cut row", {kHeader, R"({"seq":0,"t":0,"ev":"stage_output","req":1,"ints":[2,0,4,7,1]})"}, 2,
       "'ints': this stage_output event holds 5 integers; its layout is [layers done, first lane, lanes, then per row: position, "
       "context lane, hash of the deep lanes] (3 per row)"},
      {"a prepare padding row cut short", {kHeader, R"({"seq":0,"t":0,"ev":"padding_rows","text":"prepare_inputs","value":3,"ints":[0,0,1,5]})"}, 2,
       "'ints': this padding_rows event holds 4 integers; its layout is [per padding row the kernel's fields...] (5 per row)"},
      {"a gate whose flag is 2", {kHeader, R"({"seq":0,"t":0,"ev":"gate","rank":0,"value":2,"step":1})"}, 2,
       "'value': this gate event's value is 2; expected 0 or 1"},
      {"integers on a runtime event", {kHeader, R"({"seq":0,"t":0,"ev":"note","ints":[1]})"}, 2,
       "'ints': this note event carries integers (1); only engine probes do"},
  };
  // clang-format on
  const fs::path d = temp_dir("bad");
  for (const BadTrace& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write(d / "bad.jsonl", joined(c.lines));
    const Out r = check({.traces = {path}});
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(fmt::format("{}:{}: ", path, c.line)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

// Probes with a fixed vocabulary carry a typed subject; a trace writes it as "text", the names it
// always had, and reads it back typed. A module load of a trace written before it carried its step
// gets the step from its call site.
TEST(TraceInput, TypedSubjectsRoundTripThroughTheTraceAndOldModuleLoadsKeepTheirStep) {
  std::vector<core::Event> events(6);
  events[0].kind = core::EventKind::warmup_phase;
  events[0].subject.phase = core::WarmupPhase::feedback_enabled;
  events[1].kind = core::EventKind::padding_rows;
  events[1].subject.padding_kernel = core::PaddingKernel::prepare_dflash_inputs;
  events[2].kind = core::EventKind::table_bound;
  events[2].subject.table = core::WeightTable::draft_embed_tokens;
  const std::vector<int64_t> table_ints{4, 0};  // [entries, entries never written]
  events[2].ints = table_ints;
  events[3].kind = core::EventKind::batch_scheduled;
  events[3].subject.step_kind = core::StepKind::warmup;
  events[4].kind = core::EventKind::batch_scheduled;  // a serving step writes no text
  events[5].kind = core::EventKind::module_load;
  events[5].text = "execute_model step 12";
  std::vector<std::string> lines = {kHeader};
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].seq = i;
    lines.push_back(core::to_json(events[i]));
  }
  EXPECT_NE(lines[1].find(R"("text":"feedback enabled")"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[5].find("text"), std::string::npos) << lines[5];
  std::istringstream in(joined(lines));
  traces::TraceReader reader(in, "typed.jsonl", {.require_trailer = false});
  std::vector<core::Event> back;
  while (const core::Event* e = reader.next()) back.push_back(*e);
  ASSERT_EQ(back.size(), events.size());
  EXPECT_EQ(back[0].subject.phase, core::WarmupPhase::feedback_enabled);
  EXPECT_EQ(back[1].subject.padding_kernel, core::PaddingKernel::prepare_dflash_inputs);
  EXPECT_EQ(back[2].subject.table, core::WeightTable::draft_embed_tokens);
  EXPECT_EQ(back[3].subject.step_kind, core::StepKind::warmup);
  EXPECT_EQ(back[4].subject.step_kind, core::StepKind::serving);
  EXPECT_EQ(back[5].step, 12) << "the step of an old module load, from its call site";
}

TEST(TraceInput, ARecordedFailureTheEventsDoNotShowIsNotAPass) {
  const fs::path d = temp_dir("recorded");
  // Every operation pairs, but the run recorded a deadlock (found by the simulator, not the events).
  const std::string deadlock = write(d / "deadlock.jsonl", joined({kHeader, kSend, kRecv, trailer("deadlock", 2)}));
  Out r = check({.traces = {deadlock}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict deadlock (recorded deadlock)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deadlock (recorded-verdict)"), std::string::npos) << r.out;
  const std::string clean = write(d / "clean.jsonl", joined({kHeader, kSend, kRecv, trailer("pass", 2)}));
  r = check({.traces = {clean}});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict pass (recorded pass)"), std::string::npos) << r.out;
}

// A serving trace configures the monitors from the scenario its header names, whose bytes must
// hash to what the header recorded.
class ServingTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test: ctest runs the tests of this fixture in parallel processes.
    dir_ = temp_dir(std::string("serving_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    scenario_ = (dir_ / "stale_drafts.toml").string();
    fs::copy_file(kSource + "/scenarios/regressions/stale_drafts.toml", scenario_);
    trace_ = (dir_ / "run.jsonl").string();
    const auto r = tools::run_command({.files = {scenario_}, .seeds = 1, .trace = trace_}, sink_, sink_);
    ASSERT_EQ(r, 0) << sink_.str();
  }
  fs::path dir_;
  std::string scenario_, trace_;
  std::ostringstream sink_;
};

TEST_F(ServingTrace, ChecksAsOnlineWhereverTheScenarioIsFound) {
  Out r = check({.traces = {trace_}});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("stale-draft (draft-freshness)"), std::string::npos) << r.out;
  // Moved elsewhere with its scenario: named explicitly, it still checks the same.
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  fs::copy_file(trace_, elsewhere / "run.jsonl");
  fs::copy_file(scenario_, elsewhere / "s.toml");
  r = check({.traces = {(elsewhere / "run.jsonl").string()}, .scenario = (elsewhere / "s.toml").string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("stale-draft (draft-freshness)"), std::string::npos) << r.out;
}

// A trace carries its scenario: it is checked from anywhere, whatever became of the file. A trace
// without it (an older ppspec's) is refused when its file is missing or changed.
TEST_F(ServingTrace, ATraceCarriesItsScenarioAndAnOlderOneNeedsTheFileAsItWas) {
  {
    std::ofstream(scenario_, std::ios::app) << "[spec]\nk = 1\n";  // changed after the run
  }
  // The run failed (stale drafts); what matters is that it is checked, with the embedded scenario.
  Out r = check({.traces = {trace_}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict stale-draft (recorded stale-draft)"), std::string::npos) << r.out;
  // The send the stopped run left unmatched is that stop's consequence: a note, not a second finding.
  EXPECT_NE(r.out.find("note: fifo-misalignment (unmatched)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("left unmatched when the run stopped at its first failure"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n    fifo-misalignment (unmatched)"), std::string::npos) << r.out;
  fs::remove(scenario_);
  const fs::path away = dir_ / "elsewhere";
  fs::create_directories(away);
  std::vector<std::string> lines = lines_of(trace_);
  r = check({.traces = {write(away / "moved.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict stale-draft (recorded stale-draft)"), std::string::npos) << r.out;
  {
    tools::ShowArgs show;  // `show` too, with no --scenario
    show.input = (away / "moved.jsonl").string();
    std::ostringstream out, err;
    EXPECT_EQ(tools::show_command(show, out, err), 0) << err.str();
    EXPECT_NE(out.str().find("stale-draft"), std::string::npos) << out.str();
  }
  auto header = nlohmann::json::parse(lines[0]);
  header["scenario_text"] = header["scenario_text"].get<std::string>() + "\n";
  lines[0] = header.dump();
  r = check({.traces = {write(away / "edited.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the trace was edited"), std::string::npos) << r.err;

  header.erase("scenario_text");
  header.erase("content_hash");
  lines[0] = header.dump();
  r = check({.traces = {write(dir_ / "older.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot find the scenario"), std::string::npos) << r.err;
  // A header that names another serving scenario: its hash gives it away.
  header["file"] = kSource + "/scenarios/regressions/stale_drafts_off.toml";
  lines[0] = header.dump();
  r = check({.traces = {write(dir_ / "renamed.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("has changed since"), std::string::npos) << r.err;
}

TEST_F(ServingTrace, AServingTraceWithoutItsScenarioHashIsRefused) {
  std::vector<std::string> lines = lines_of(trace_);
  auto header = nlohmann::json::parse(lines[0]);
  header.erase("scenario_hash");
  Out r = check({.traces = {write(dir_ / "orphan.jsonl", joined({header.dump()}))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("an embedded scenario without its scenario_hash"), std::string::npos) << r.err;
  header.erase("scenario_text");
  header.erase("content_hash");
  lines[0] = header.dump();
  r = check({.traces = {write(dir_ / "old.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("records no scenario hash"), std::string::npos) << r.err;
  header.erase("kind");
  lines[0] = header.dump();
  r = check({.traces = {write(dir_ / "older.jsonl", joined(lines))}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a serving probe in a trace whose header does not say"), std::string::npos) << r.err;
}

// A simulated deadlock's trace: the operations the stopped run left unmatched are notes, and the
// cycle the run recorded (which events alone do not show) is the finding, in the run's words.
TEST(TraceInput, ARecordedDeadlockIsCheckedAsItsCycleNotAsWhatItLeftUnmatched) {
  const std::string trace = scratch_path("recorded_deadlock.jsonl").string();
  std::ostringstream o, e;
  ASSERT_EQ(
      tools::run_command({.files = {kSource + "/scenarios/programs/lazy_load_deadlock.toml"}, .trace = trace}, o, e), 0)
      << o.str();
  const Out r = check({.traces = {trace}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict deadlock (recorded deadlock)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n    deadlock (cycle)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("as the run recorded it (trailer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: fifo-misalignment (unmatched)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n    fifo-misalignment (unmatched)"), std::string::npos) << r.out;
}

// Bounded memory: a collective every member posted is forgotten, however long the trace.
TEST(TraceInput, ClosedCollectiveSlotsAreForgotten) {
  verify::PairingChecker pairing;
  core::Event init;
  init.kind = core::EventKind::comm_init;
  init.comm = "w";
  pairing.on_event(init);
  pairing.on_event(init);
  core::Event post;
  post.kind = core::EventKind::op_posted;
  post.comm = "w";
  post.has_op = true;
  post.op.kind = core::OpKind::all_reduce;
  post.op.dtype = core::Dtype::f32;
  post.op.count = 4;
  for (int64_t k = 0; k < 10000; ++k) {
    post.cseq = k;
    for (core::RankId r : {0, 1}) {
      post.rank = r;
      pairing.on_event(post);
    }
  }
  EXPECT_EQ(pairing.open_slots(), 0u);
  EXPECT_EQ(pairing.pairs(), 10000u);
  post.cseq = 10000;
  pairing.on_event(post);
  EXPECT_EQ(pairing.open_slots(), 1u);
  ASSERT_TRUE(pairing.unmatched().has_value());
}

}  // namespace
}  // namespace ppspec::testing
