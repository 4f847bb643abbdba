#include "tools/watch_command.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "report/report.h"
#include "tools/bad_input.h"
#include "watch/line_sources.h"
#include "watch/watcher.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kPollMs = 100;
constexpr double kAbortGraceS = 5;  // after --abort fired: how long the ranks get to go

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void say(std::ostream& out, bool json, double after_s, const watch::WatchReport& r) {
  const char* what = r.kind == watch::WatchReport::Kind::misalignment ? "misalignment" : "stall";
  if (json) {
    // unix_ns: when it was said, on the clock the plugins' traces use (CLOCK_REALTIME), to time it against the job.
    const auto unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const nlohmann::json line{
        {"report", what}, {"after_s", after_s}, {"unix_ns", unix_ns}, {"finding", report::to_json(r.finding)}};
    out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << std::endl;  // JSON Lines: one report a line
    return;
  }
  std::string s =
      fmt::format("ppspec watch: [{:.1f} s] {}\n", after_s,
                  r.kind == watch::WatchReport::Kind::misalignment ? "MISALIGNMENT, as the operation is posted"
                                                                   : "STALL: no operation progressed");
  report::append_finding(s, r.finding, "");
  if (r.finding.culprit.rank >= 0)
    s += fmt::format("      culprit: rank {} on '{}' {} #{} ({})\n", r.finding.culprit.rank, r.finding.culprit.comm,
                     r.finding.culprit.p2p ? "p2p" : "collective", r.finding.culprit.position, r.finding.culprit.what);
  out << s << std::flush;
}

std::unique_ptr<watch::LineInbox> inbox_of(const WatchArgs& a) {
  if (a.dir.empty() == a.listen.empty())
    throw core::InputError(
        "", 0,
        "say where the ranks' plugins write: --dir FOLDER (PPSPEC_WATCH=FOLDER) or --listen HOST:PORT "
        "(PPSPEC_WATCH=HOST:PORT), one of them");
  if (!a.dir.empty()) return std::make_unique<watch::FolderInbox>(a.dir);
  return std::make_unique<watch::SocketInbox>(a.listen);
}

struct Loop {
  const WatchArgs& args;
  std::ostream& out;
  watch::Watcher& w;
  watch::LineInbox& inbox;
  Clock::time_point start = Clock::now();
  int findings = 0;
  std::optional<Clock::time_point> aborted;

  void found(const watch::WatchReport& r) {
    ++findings;
    say(out, args.json, seconds_since(start), r);
    if (!args.abort || aborted) return;
    inbox.request_abort();
    aborted = Clock::now();
    if (!args.json) out << "ppspec watch: --abort: asked every rank to stop now\n" << std::flush;
  }

  void run() {
    uint64_t progress = w.progress();
    Clock::time_point moved = Clock::now();
    bool stall_said = false;
    while (!g_stop.load()) {
      inbox.poll(w, kPollMs);
      for (const watch::WatchReport& r : w.take_reports()) found(r);
      if (w.progress() != progress) {
        progress = w.progress();
        moved = Clock::now();
        stall_said = false;
      } else if (!stall_said && seconds_since(moved) >= args.stall_s) {
        stall_said = true;
        if (auto s = w.stall()) found(*s);
      }
      const bool ended = w.all_ended() && w.counts().sources >= static_cast<uint64_t>(std::max(args.ranks, 1));
      if (ended || (aborted && seconds_since(*aborted) > kAbortGraceS) ||
          (args.timeout_s > 0 && seconds_since(start) > args.timeout_s))
        break;
    }
  }
};

int summarise(const WatchArgs& args, const Loop& loop, watch::Watcher& w, const std::string& merged,
              std::ostream& out) {
  const core::RunResult result = w.result();
  w.finish(result);
  report::RunRecord rec;
  rec.file = args.dir.empty() ? args.listen : args.dir;
  rec.scenario = fmt::format("nccl job ({} ranks)", w.ranks().size());
  rec.strategy = "hardware";
  rec.has_expectation = false;
  rec.result = result;
  rec.ok = result.verdict == core::Verdict::pass && loop.findings == 0;
  rec.reproduce = fmt::format("ppspec check {}", merged);
  if (args.json) {
    const nlohmann::json line{
        {"summary", report::to_json(rec)}, {"merged_trace", merged}, {"dropped_lines", w.dropped_lines()}};
    out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    out << report::format_text(rec);
    out << fmt::format(
        "ppspec watch: {} ranks, {} operations posted, {} completed, {} line(s) dropped; the job's trace: {} "
        "(ppspec check, show, export read it)\n",
        w.ranks().size(), w.counts().posted, w.counts().completed, w.dropped_lines(), merged);
  }
  return rec.ok ? 0 : 1;
}

}  // namespace

int watch_command(const WatchArgs& args, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec watch", [&] {
    std::unique_ptr<watch::LineInbox> inbox = inbox_of(args);
    std::error_code ec;
    fs::create_directories(args.out, ec);
    const std::string merged = (fs::path(args.out) / "job.jsonl").string();
    watch::Watcher w(merged);
    if (!args.json)
      out << fmt::format(
                 "ppspec watch: reading {}; a stall is {:.0f} s without progress; Ctrl-C ends the watch with a "
                 "summary\n",
                 inbox->describe(), args.stall_s)
          << std::flush;
    g_stop.store(false);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    Loop loop{args, out, w, *inbox, Clock::now(), 0, std::nullopt};
    loop.run();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    return summarise(args, loop, w, merged, out);
  });
}

}  // namespace ppspec::tools
