#include "tools/fuzz_command.h"

#include "tools/backends.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/printable.h"
#include "engine/faults.h"
#include "scenario/fuzzer/around.h"
#include "scenario/fuzzer/campaign.h"
#include "tools/bad_input.h"
#include "tools/run_support.h"

namespace ppspec::tools {
namespace {

// "90", "90s", "5m", "2h" -> seconds.
std::optional<double> duration(std::string_view s) {
  uint64_t scale = 1;
  if (!s.empty() && (s.back() == 's' || s.back() == 'm' || s.back() == 'h')) {
    scale = s.back() == 'h' ? 3600 : s.back() == 'm' ? 60 : 1;
    s.remove_suffix(1);
  }
  const auto v = parse_count(s, 1, 30 * 24 * 3600);
  if (!v) return std::nullopt;
  return static_cast<double>(*v * scale);
}

struct BadFlag {
  std::string message;
};

void parse_shard(const std::string& text, fuzzer::FuzzOptions& o) {
  const auto slash = text.find('/');
  const auto i =
      slash == std::string::npos ? std::nullopt : parse_count(std::string_view(text).substr(0, slash), 0, 1u << 20);
  const auto n =
      slash == std::string::npos ? std::nullopt : parse_count(std::string_view(text).substr(slash + 1), 1, 1u << 20);
  if (!i || !n)
    throw BadFlag{fmt::format("--shard '{}': expected I/N, two integers with 0 <= I < N", core::printable(text, 40))};
  if (*i >= *n) throw BadFlag{fmt::format("--shard '{}': shard {} of {} does not exist (0 <= I < N)", text, *i, *n)};
  o.shard = *i;
  o.shards = *n;
}

std::vector<std::string> parse_faults(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    if (!engine::is_fault(name))
      throw BadFlag{fmt::format("--faults: '{}' is not a fault; the faults are: {}", core::printable(name, 40),
                                engine::fault_names())};
    out.push_back(name);
    start = comma + 1;
  }
  return out;
}

// Starts `argv` as this program (/proc/self/exe), its output to files in `dir`, with
// kStopWorkerSignal blocked until its InterruptScope handles it: asked to stop before then, a worker
// stops at its first case instead of dying of the signal's default action.
pid_t spawn_worker(const std::vector<std::string>& argv, const std::string& dir) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  sigaddset(&mask, core::kStopWorkerSignal);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, (dir + "/report.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (dir + "/progress.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw BadFlag{fmt::format("--jobs: cannot start a worker process: {}", std::strerror(rc))};
  return pid;
}

// Whether a file or folder of `dir` is one a campaign writes.
bool campaign_file(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name == "summary.json" || name.starts_with("current.") || name.starts_with("found-") ||
         name.ends_with(".report.txt") || name.ends_with(".invalid.toml") || name.starts_with("job-");
}

// --out: refused when an earlier campaign's files are there (a new summary beside an old run's
// found files reads as one campaign), unless --force, which removes those files (only those).
void claim_out_dir(const std::string& dir, bool force) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  std::vector<std::filesystem::path> earlier;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (campaign_file(entry.path())) earlier.push_back(entry.path());
  if (earlier.empty()) return;
  if (!force)
    throw BadFlag{
        fmt::format("--out '{}' holds an earlier campaign's files ({}, ...): name another folder, or --force to "
                    "replace them",
                    core::printable(dir, 80), earlier.front().filename().string())};
  for (const auto& p : earlier) std::filesystem::remove_all(p, ec);
}

fuzzer::FuzzOptions options(const FuzzArgs& a) {
  fuzzer::FuzzOptions o;
  if (!a.space.empty() && !a.around.empty())
    throw BadFlag{"--around and a space file: give one (a space file around a scenario says `around = \"FILE\"`)"};
  if (!a.space.empty()) o.space = fuzzer::read_space(a.space);
  if (!a.around.empty()) o.space = fuzzer::space_around(a.around);
  const auto seed = parse_count(a.seed, 0, INT64_MAX);
  if (!seed)
    throw BadFlag{fmt::format("--seed '{}': expected a seed in [0, 9223372036854775807]", core::printable(a.seed, 40))};
  o.seed = *seed;
  if (!a.cases.empty()) {
    o.cases = parse_count(a.cases, 1, uint64_t{1} << 40);
    if (!o.cases)
      throw BadFlag{fmt::format("--cases '{}': expected a count in [1, 2^40]", core::printable(a.cases, 40))};
  }
  if (!a.time.empty()) {
    const auto t = duration(a.time);
    if (!t)
      throw BadFlag{fmt::format("--time '{}': expected seconds, or a number with s, m or h (at most 30 days)",
                                core::printable(a.time, 40))};
    o.time_s = *t;
  }
  if (!o.cases && o.time_s == 0) o.time_s = 60;  // the default campaign: one minute
  if (!a.shard.empty()) parse_shard(a.shard, o);
  const auto jobs = parse_count(a.jobs, 1, 256);
  if (!jobs)
    throw BadFlag{
        fmt::format("--jobs '{}': expected a number of worker processes in [1, 256]", core::printable(a.jobs, 40))};
  if (!a.faults.empty()) o.faults = parse_faults(a.faults);
  // Shrinking reruns a case hundreds of times, and a hang on hardware costs its watchdog's limit:
  // fuzzing runs on the simulator; a found file runs on GPUs with `ppspec run --backend gpu`.
  if (parse_run_backend(a.backend) != RunBackend::sim)
    throw BadFlag{
        fmt::format("--backend '{}': fuzzing runs on the simulator (sim); run a found file on GPUs with "
                    "`ppspec run --backend gpu FILE`",
                    core::printable(a.backend, 40))};
  o.out_dir = a.out;
  claim_out_dir(a.out, a.force);
  o.keep_going = a.keep_going;
  o.live_progress = isatty(fileno(stderr)) != 0;
  return o;
}

}  // namespace

namespace {

constexpr int kCrashShrinkRunsMax = 200;  // each a process: a crash shrinks within minutes

fuzzer::FuzzReport crashed_worker(const fuzzer::FuzzOptions& o, const std::string& dir, const fuzzer::Death& death,
                                  std::ostream& err);

// The workers' exit statuses, in order. Interrupted, this process asks every worker still running to
// stop after its case (kStopWorkerSignal), once: a SIGINT sent to this process alone (kill -INT) ends
// the campaign as Ctrl-C does, and a worker that had the terminal's Ctrl-C too is asked, not killed.
std::vector<int> wait_for_workers(const std::vector<pid_t>& pids) {
  std::vector<int> statuses(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  size_t left = pids.size();
  bool asked = false;
  while (left > 0) {
    for (size_t j = 0; j < pids.size(); ++j) {
      if (done[j] || waitpid(pids[j], &statuses[j], WNOHANG) != pids[j]) continue;
      done[j] = true;
      --left;
    }
    if (core::interrupted() && !asked) {
      for (size_t j = 0; j < pids.size(); ++j)
        if (!done[j]) kill(pids[j], core::kStopWorkerSignal);
      asked = true;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return statuses;
}

// --jobs J: J worker processes of this program, each a disjoint shard of this shard's cases
// (shard I of N becomes shards I*J + j of N*J), each with its own --out folder; then their merge.
fuzzer::FuzzReport run_jobs(const FuzzArgs& a, const fuzzer::FuzzOptions& o, uint64_t jobs, std::ostream& err) {
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;
  std::filesystem::create_directories(o.out_dir);
  for (uint64_t j = 0; j < jobs; ++j) {
    const std::string dir = fmt::format("{}/job-{}", o.out_dir, j);
    std::filesystem::create_directories(dir);
    std::vector<std::string> argv = {
        "ppspec", "fuzz", "--seed",  std::to_string(o.seed),
        "--out",  dir,    "--shard", fmt::format("{}/{}", o.shard * jobs + j, o.shards * jobs)};
    if (!a.space.empty()) argv.push_back(a.space);
    if (!a.around.empty()) argv.insert(argv.end(), {"--around", a.around});
    if (o.cases)
      argv.insert(argv.end(), {"--cases", std::to_string(std::max<uint64_t>(1, (*o.cases + jobs - 1 - j) / jobs))});
    if (o.time_s > 0) argv.insert(argv.end(), {"--time", fmt::format("{:.0f}", o.time_s)});
    if (!a.faults.empty()) argv.insert(argv.end(), {"--faults", a.faults});
    if (o.keep_going) argv.push_back("--keep-going");
    pids.push_back(spawn_worker(argv, dir));
    dirs.push_back(dir);
  }
  err << fmt::format("{} worker processes; progress in {}/job-*/progress.log\n", jobs, o.out_dir);
  const std::vector<int> statuses = wait_for_workers(pids);
  std::vector<fuzzer::FuzzReport> parts;
  for (size_t j = 0; j < pids.size(); ++j) {
    const int status = statuses[j];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
      throw BadFlag{fmt::format("worker {} refused its input (see {}/progress.log)", j, dirs[j])};
    const bool stopped = WIFEXITED(status) && WEXITSTATUS(status) == core::kExitInterrupted;
    if (const auto death = fuzzer::death_of(status); death && !stopped) {
      parts.push_back(crashed_worker(o, dirs[j], *death, err));
      continue;
    }
    // Exit 0, 1 (failures found), 3 (internal errors found) or 130 (stopped): its summary says which.
    parts.push_back(fuzzer::read_summary(dirs[j]));
  }
  fuzzer::FuzzReport merged = fuzzer::merge(parts);
  fuzzer::write_summary(merged, o);
  return merged;
}

// A worker killed by a signal or a sanitizer: the case it was running (its current.case) is a
// finding of the crash class, kept and shrunk in child processes.
fuzzer::FuzzReport crashed_worker(const fuzzer::FuzzOptions& o, const std::string& dir, const fuzzer::Death& death,
                                  std::ostream& err) {
  fuzzer::FuzzReport r;
  std::ifstream in(dir + "/current.case");
  uint64_t index = 0;
  if (!(in >> index))
    throw BadFlag{fmt::format("a worker {} before its first case (see {}/progress.log)", fuzzer::describe(death), dir)};
  err << fmt::format("worker in {} {} at case {}: shrinking it in child processes\n", dir, fuzzer::describe(death),
                     index);
  fuzzer::FuzzOptions mine = o;
  mine.out_dir = dir;
  r.found.push_back(fuzzer::settle_crash(mine, index, death, "/proc/self/exe", kCrashShrinkRunsMax));
  r.failures = 1;
  r.cases = 1;
  return r;
}

}  // namespace

// 130 when Ctrl-C stopped it; 3 when ppspec itself failed on a case (an internal error or a crash); 1 when a case
// failed; 0.
int exit_status(const fuzzer::FuzzReport& r) {
  if (r.interrupted) return core::kExitInterrupted;
  if (std::any_of(r.found.begin(), r.found.end(), [](const fuzzer::Found& f) { return f.internal; })) return 3;
  return r.failures > 0 ? 1 : 0;
}

int fuzz_command(const FuzzArgs& args, std::ostream& out, std::ostream& err) {
  try {
    if (!args.merge.empty()) {
      std::vector<fuzzer::FuzzReport> parts;
      for (const std::string& d : args.merge) parts.push_back(fuzzer::read_summary(d));
      const fuzzer::FuzzReport merged = fuzzer::merge(parts);
      out << fuzzer::format_report(merged);
      return exit_status(merged);
    }
    const fuzzer::FuzzOptions o = options(args);
    // Ctrl-C: the summary so far, printed and written (exit 130); a worker is asked the same way.
    const core::InterruptScope ctrl_c(/*stop_worker=*/true);
    const uint64_t jobs = *parse_count(args.jobs, 1, 256);
    if (jobs > 1) {
      const fuzzer::FuzzReport merged = run_jobs(args, o, jobs, err);
      out << fuzzer::format_report(merged);
      return exit_status(merged);
    }
    if (o.space.around)
      err << fmt::format("ppspec fuzz: around {}: {}, its workload, KV cache and schedule drawn\n",
                         core::printable(o.space.around_file, 200), scenario::summary(*o.space.around));
    err << fmt::format("ppspec fuzz: found files and summary.json go to {}/\n", o.out_dir);
    return exit_status(fuzzer::run_campaign(o, out, err));
  } catch (const BadFlag& b) {
    err << "ppspec fuzz: " << b.message << '\n';
    return kExitBadInput;
  } catch (const core::InputError& e) {
    return report_bad_input(err, e, "ppspec fuzz");
  }
}

}  // namespace ppspec::tools
