// A case that crashed a worker process: kept and shrunk in child processes, since a crash cannot be
// caught in the process it kills (scenario/fuzzer/campaign.h, settle_crash).
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/interrupt.h"
#include "scenario/fuzzer/campaign.h"
#include "scenario/fuzzer/death.h"

extern char** environ;

namespace ppspec::fuzzer {
namespace {

// Runs `ppspec run FILE` in a child process, its output discarded; how it died, if it did.
std::optional<Death> death_of_run(const std::string& ppspec, const std::string& file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> argv = {ppspec, "run", file};
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, ppspec.c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::nullopt;
  int status = 0;
  waitpid(pid, &status, 0);
  return death_of(status);
}

std::string text_of(const FuzzCase& c, const std::string& name, const std::string& why) {
  return case_toml(c, name, why, Expectation{core::Verdict::pass, ""});
}

}  // namespace

Found settle_crash(const FuzzOptions& opts, uint64_t index, const Death& death, const std::string& ppspec,
                   int runs_max) {
  Found f;
  f.internal = true;
  f.kind = kCrashClass;
  f.case_index = index;
  rc::Shrinkable<FuzzCase> failing = draw(opts, index);
  f.original = case_summary(failing.value());
  std::filesystem::create_directories(opts.out_dir);
  const std::string probe = opts.out_dir + "/crash-probe.toml";
  auto crashes = [&](const FuzzCase& c) {
    // After Ctrl-C (which the probe, in the terminal's process group, got too) no candidate is
    // tried: the case as shrunk so far is kept, and it still crashes.
    if (core::interrupted()) return false;
    std::ofstream(probe, std::ios::binary) << text_of(c, "crash-probe", "");
    return death_of_run(ppspec, probe) == death;
  };
  const bool again = crashes(failing.value());
  if (again) failing = shrink_while(std::move(failing), crashes, runs_max, f);
  std::filesystem::remove(probe);
  const FuzzCase shrunk = failing.value();
  f.shrunk = case_summary(shrunk);
  f.requests = shrunk.is_program ? 0 : shrunk.serving.num_requests;
  f.ranks = shrunk.is_program ? shrunk.program.shape.ranks : shrunk.serving.dp * shrunk.serving.pp * shrunk.serving.tp;
  f.file = fmt::format("{}/found-seed{}-case{}-crash.toml", opts.out_dir, opts.seed, index);
  const std::string why = fmt::format(
      "Crashed a `ppspec fuzz --seed {}` worker (case {}: it {}){}, shrunk in {} steps from:\n  {}\n", opts.seed, index,
      describe(death), again ? "" : " — and did not crash again alone", f.shrink_steps, f.original);
  std::ofstream(f.file, std::ios::binary) << text_of(shrunk, std::filesystem::path(f.file).stem().string(), why);
  f.command = "ppspec run " + f.file;
  f.summary = fmt::format("ppspec crashed on the case (it {}){}", describe(death),
                          again ? "" : "; run alone it did not crash again (the kept file is the case as drawn)");
  return f;
}

}  // namespace ppspec::fuzzer
