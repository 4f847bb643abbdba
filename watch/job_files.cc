#include "watch/job_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/finding_kinds.h"
#include "core/error.h"
#include "traces/profiler_trace.h"
#include "watch/watcher.h"

namespace ppspec::watch {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && traces::is_profiler_trace(e.path().string())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool is_plugin_trace_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return !traces_in(path).empty();
  return traces::is_profiler_trace(path);
}

std::vector<std::string> plugin_trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& p : paths) {
    if (!fs::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    const std::vector<std::string> in = traces_in(p);
    out.insert(out.end(), in.begin(), in.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

JobCheck check_plugin_traces(const std::vector<std::string>& files, const std::string& merged_trace) {
  Watcher w(merged_trace, /*strict=*/true);
  std::vector<std::ifstream> in;
  std::vector<size_t> source;
  for (const std::string& f : files) {
    in.emplace_back(f, std::ios::binary);
    if (!in.back()) throw core::InputError(f, 0, "cannot read this file");
    source.push_back(w.add_source(f));
  }
  // The ranks' lines in turn, one each, as a live job's would come. A last line without its end is
  // what a process killed while writing leaves: not the plugin's to answer for, and said.
  size_t torn = 0;
  for (bool more = true; more;) {
    more = false;
    for (size_t i = 0; i < in.size(); ++i) {
      std::string line;
      if (!std::getline(in[i], line)) continue;
      more = true;
      if (in[i].eof() && !line.empty()) {
        ++torn;
        continue;
      }
      w.add_line(source[i], line);
    }
  }
  JobCheck out;
  out.result = w.result();
  if (torn > 0) {
    core::Finding n;
    n.verdict = core::Verdict::pass;
    n.kind = core::FindingKind::torn_line;
    n.time = core::kNoTime;
    n.summary = std::to_string(torn) +
                " trace(s) end in an unfinished line (a process killed while its plugin wrote): not read";
    out.result.notes.push_back(std::move(n));
  }
  w.finish(out.result);
  out.ranks = w.ranks().size();
  out.posted = w.counts().posted;
  out.completed = w.counts().completed;
  return out;
}

}  // namespace ppspec::watch
