// traces/README.md documents the trace as an input a user's tool may write: its example is read
// from the page itself, so the page cannot drift from what the reader accepts.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/command_test.h"
#include "tests/scratch.h"
#include "tools/check_command.h"
#include "tools/import_command.h"

namespace ppspec::testing {
namespace {

// The first ```jsonl block of traces/README.md.
std::string documented_example() {
  std::ifstream page(kSource + "/traces/README.md");
  std::stringstream all;
  all << page.rdbuf();
  const std::string text = all.str();
  const size_t open = text.find("```jsonl\n");
  const size_t close = text.find("```", open + 9);
  EXPECT_NE(open, std::string::npos);
  EXPECT_NE(close, std::string::npos);
  return text.substr(open + 9, close - open - 9);
}

Out check_text(const std::string& name, const std::string& text) {
  const std::string path = scratch_path(name).string();
  std::ofstream(path) << text;
  tools::CheckArgs a;
  a.traces = {path};
  std::ostringstream out, err;
  const int code = tools::check_command(a, out, err);
  return Out{code, out.str(), err.str()};
}

TEST(TraceFormat, TheDocumentedTraceIsCheckedAsThePageSays) {
  const std::string example = documented_example();
  const Out o = check_text("documented.jsonl", example);
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("collective #0 on 'pp' pairs mismatched operations: count 24 vs 20"), std::string::npos)
      << o.out;

  std::string agreed = example;
  agreed.replace(agreed.find("\"count\":20"), 10, "\"count\":24");
  const Out pass = check_text("documented_pass.jsonl", agreed);
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;

  // Cut before its trailer: refused, not judged.
  const Out cut = check_text("documented_cut.jsonl", example.substr(0, example.find("{\"ppspec_trace_end\"")));
  EXPECT_EQ(cut.code, 2);
  EXPECT_NE(cut.err.find("ends without its trailer"), std::string::npos) << cut.err;

  // And imported as a scenario that reproduces it.
  tools::ImportArgs im;
  im.inputs = {scratch_path("documented.jsonl").string()};
  im.out = scratch_path("documented.toml").string();
  im.force = true;
  std::ostringstream out, err;
  EXPECT_EQ(tools::import_command(im, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("the same verdict (misaligned)"), std::string::npos) << out.str();
}

// A position (cseq) left out is counted per rank and communicator, and per peer and direction for
// p2p: the second collective pairs with the second.
TEST(TraceFormat, PositionsLeftOutAreCountedInTraceOrder) {
  const std::string text = R"({"ppspec_trace":1,"backend":"gpu"}
{"ev":"comm_init","rank":0,"comm":"w","value":2}
{"ev":"comm_init","rank":1,"comm":"w","value":2}
{"ev":"op_posted","rank":0,"comm":"w","op_id":1,"op":"all_reduce","dtype":"f32","count":8}
{"ev":"op_posted","rank":0,"comm":"w","op_id":2,"op":"all_reduce","dtype":"f32","count":16}
{"ev":"op_posted","rank":1,"comm":"w","op_id":3,"op":"all_reduce","dtype":"f32","count":8}
{"ev":"op_posted","rank":1,"comm":"w","op_id":4,"op":"all_reduce","dtype":"f32","count":16}
{"ev":"op_posted","rank":0,"comm":"w","op_id":5,"op":"send","dtype":"f32","count":4,"peer":1}
{"ev":"op_posted","rank":1,"comm":"w","op_id":6,"op":"recv","dtype":"f32","count":4,"peer":0}
{"ev":"op_completed","rank":0,"comm":"w","op_id":1}
{"ev":"op_completed","rank":0,"comm":"w","op_id":2}
{"ev":"op_completed","rank":1,"comm":"w","op_id":3}
{"ev":"op_completed","rank":1,"comm":"w","op_id":4}
{"ev":"op_completed","rank":0,"comm":"w","op_id":5}
{"ev":"op_completed","rank":1,"comm":"w","op_id":6}
{"ppspec_trace_end":1,"verdict":"pass"}
)";
  const Out o = check_text("positions.jsonl", text);
  EXPECT_EQ(o.code, 0) << o.out << o.err;
}

}  // namespace
}  // namespace ppspec::testing
