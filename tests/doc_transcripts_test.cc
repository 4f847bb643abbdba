// Every transcript in the README and docs/ is what the command prints today: each fenced block whose
// lines start with `$ ppspec` (or `$ ./build/default/tools/ppspec`) is run, command by command, in a
// scratch folder that sees the repository's scenarios/ and traces/, and its shown lines compared
// with the output. A doc that drifts from the program fails here.
//
// How a transcript reads: the lines after a command are lines of its output, in order (a transcript
// may leave lines out, and stop early); `...` within a line stands for any text, and a line that is
// only `...` for lines left out; wall-clock figures (`1.5 ms wall`, `after 0.4 s`) are not compared.
// A command continued with `\` takes its next line. A ```toml block whose first line is `# NAME.toml`
// is a file the doc's commands read: written into their folder first.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

struct Step {
  std::string command;  // as written, after "$ "
  std::vector<std::string> shown;
};

struct Transcript {
  fs::path doc;
  std::string where;  // "README.md:30"
  std::vector<Step> steps;
};

struct DocFile {
  std::string name;  // "exchange.toml"
  std::string text;
};

// The ```toml blocks of a doc that name their file on their first line (`# exchange.toml`).
std::vector<DocFile> files_of(const fs::path& doc) {
  std::ifstream in(doc);
  std::vector<DocFile> out;
  std::string line;
  bool in_file = false, fenced = false;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      const bool opens = !fenced;
      fenced = !fenced;
      in_file = false;
      if (opens && line == "```toml" && std::getline(in, line) && line.starts_with("# ") && line.ends_with(".toml")) {
        out.push_back({line.substr(2), line + "\n"});
        in_file = true;
      }
      continue;
    }
    if (in_file) out.back().text += line + "\n";
  }
  return out;
}

bool is_command(const std::string& line) {
  return line.starts_with("$ ppspec ") || line.starts_with("$ ./build/default/tools/ppspec ");
}

// The transcripts of one markdown file: fenced blocks whose first line is a ppspec command.
std::vector<Transcript> transcripts_of(const fs::path& file, const std::string& name) {
  std::ifstream in(file);
  std::vector<Transcript> out;
  std::string line;
  bool fenced = false, transcript = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.starts_with("```")) {
      fenced = !fenced;
      transcript = false;
      continue;
    }
    if (!fenced) continue;
    if (is_command(line) && !transcript) {
      transcript = true;
      out.push_back({file, name + ":" + std::to_string(n), {}});
    }
    if (!transcript) continue;
    Step* last = out.back().steps.empty() ? nullptr : &out.back().steps.back();
    if (last != nullptr && last->command.ends_with("\\")) {
      last->command.back() = ' ';
      last->command += line;
    } else if (is_command(line)) {
      out.back().steps.push_back({line.substr(2), {}});
    } else {
      last->shown.push_back(line);
    }
  }
  return out;
}

// Wall-clock figures out of a line; a shown line's `...` becomes "any text".
std::string without_wall_time(std::string s) {
  static const std::regex wall(R"([0-9.]+ (ms|s|us) wall|after [0-9.]+ s)");
  return std::regex_replace(s, wall, "<wall>");
}

bool line_matches(const std::string& shown, const std::string& got) {
  const std::string want = without_wall_time(shown), have = without_wall_time(got);
  std::string pattern;
  for (size_t i = 0; i < want.size();) {
    if (want.compare(i, 3, "...") == 0) {
      pattern += ".*";
      i += 3;
      continue;
    }
    const char c = want[i++];
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  return std::regex_match(have, std::regex(pattern));
}

bool is_gap(const std::string& shown) {
  return shown.find_first_not_of(' ') != std::string::npos && shown.substr(shown.find_first_not_of(' ')) == "...";
}

// The first shown line the output does not hold, in order, or "".
std::string mismatch(const std::vector<std::string>& shown, const std::vector<std::string>& got) {
  size_t g = 0;
  for (size_t s = 0; s < shown.size(); ++s) {
    if (is_gap(shown[s])) continue;
    while (g < got.size() && !line_matches(shown[s], got[g])) ++g;
    if (g == got.size())
      return "shown line " + std::to_string(s + 1) +
             " is not in the output (after the lines before it)\n  doc: " + shown[s];
    ++g;
  }
  return "";
}

struct TranscriptRun {
  std::vector<std::string> lines;
  int status = -1;  // as waitpid gives it
};

TranscriptRun run_in(const fs::path& dir, std::string command) {
  for (const char* prefix : {"./build/default/tools/ppspec ", "ppspec "})
    if (command.starts_with(prefix)) command = std::string(PPSPEC_BINARY) + " " + command.substr(strlen(prefix));
  // `a && ppspec b`: every ppspec of the line is this build's.
  for (size_t at = 0; (at = command.find("&& ppspec ", at)) != std::string::npos;)
    command.replace(at + 3, 6, PPSPEC_BINARY), at += 3;
  FILE* p = popen(("cd '" + dir.string() + "' && " + command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {};
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  TranscriptRun r;
  r.status = pclose(p);
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) r.lines.push_back(l);
  return r;
}

// A documented command ends as ppspec's commands end (0 as expected, 1 not, 2 bad input, which a
// doc may show): not killed, not an internal error (3), not a shell's "command not found".
bool ended_as_documented(int status) { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) <= 2; }

std::vector<Transcript> every_transcript() {
  const fs::path root(PPSPEC_SOURCE_DIR);
  std::vector<Transcript> all = transcripts_of(root / "README.md", "README.md");
  std::vector<fs::path> docs;
  for (const auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  std::sort(docs.begin(), docs.end());
  for (const fs::path& d : docs) {
    auto t = transcripts_of(d, "docs/" + d.filename().string());
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

TEST(DocTranscripts, EveryTranscriptIsWhatTheCommandPrints) {
#if defined(__SANITIZE_ADDRESS__)
  // The docs' output is the same in every build: the default build checks it, in seconds.
  GTEST_SKIP() << "checked by the default build";
#endif
  const std::vector<Transcript> all = every_transcript();
  EXPECT_GE(all.size(), 10u) << "the transcripts were not found";
  for (const Transcript& t : all) {
    // A folder of its own per transcript, seeing the repository's inputs, for the files it writes.
    const fs::path dir = scratch_path("doc_transcript_" + std::to_string(&t - all.data()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* input : {"scenarios", "traces", "build"})
      fs::create_directory_symlink(fs::path(PPSPEC_SOURCE_DIR) / input, dir / input);
    for (const DocFile& f : files_of(t.doc)) std::ofstream(dir / f.name) << f.text;
    for (const Step& s : t.steps) {
      const TranscriptRun ran = run_in(dir, s.command);
      EXPECT_TRUE(ended_as_documented(ran.status)) << t.where << ": $ " << s.command << " ended with " << ran.status;
      const std::string where = mismatch(s.shown, ran.lines);
      EXPECT_EQ(where, "") << t.where << ": $ " << s.command;
    }
  }
}

}  // namespace
}  // namespace ppspec::testing
