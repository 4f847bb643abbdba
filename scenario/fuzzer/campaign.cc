#include "scenario/fuzzer/campaign.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <ostream>

#include "core/plural.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/probes.h"
#include "scenario/fuzzer/fuzz_case.h"
#include "scenario/program_loader.h"
#include "program/runner.h"
#include "scenario/serving_loader.h"
#include "runs/execute.h"
#include "serving/runner.h"
#include "sim/policy.h"

namespace ppspec::fuzzer {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Outcome {
  core::Verdict verdict = core::Verdict::pass;
  std::string kind;
  std::string summary;
  std::vector<std::string> report;  // the first finding: summary, details, where
  bool internal = false;            // ppspec failed on the case: no verdict (kind kInternalErrorClass)
  bool failed() const { return internal || verdict != core::Verdict::pass; }
  bool same_as(const Outcome& o) const { return internal == o.internal && verdict == o.verdict && kind == o.kind; }
};

serving::ServingRun run_serving(const std::string& text, const std::string& file, const ServingCase& c) {
  const serving::ServingScenario s = scenario::parse_serving(text, file);
  runs::RunChoices choices;
  choices.seed = c.seed;
  choices.strategy = core::parse_strategy(c.strategy());
  PPSPEC_ASSERT(choices.strategy.has_value(), "strategy '{}' of a generated case", c.strategy());
  return runs::execute(s, choices);
}

Outcome outcome_of(const core::RunResult& result) {
  Outcome o;
  o.verdict = result.verdict;
  if (!result.findings.empty()) {
    const core::Finding& f = result.findings.front();
    o.kind = core::to_string(f.kind);
    o.summary = f.summary;
    // As a run's report says it: the engine step when the finding has one, each site by its actor
    // ("engine", "rank2.host"), never a rank number the engine core does not have.
    const std::string at = f.engine_step >= 0 ? fmt::format(", engine step {}", f.engine_step) : "";
    o.report.push_back(fmt::format("{} ({}){}: {}", core::to_string(f.verdict), f.kind, at, f.summary));
    for (const std::string& d : f.details) o.report.push_back("  " + d);
    for (const core::Site& site : f.sites)
      if (!site.actor.empty()) o.report.push_back("  where: " + core::site_words(site));
  }
  return o;
}

// A case counts once per path it reached (serving/paths_reached.h counts them in every run).
void count_paths(Coverage& cov, const ServingCase& c, const serving::ServingRun& run) {
  const serving::PathsReached& p = run.paths;
  auto once = [](int64_t n) -> uint64_t { return n > 0 ? 1 : 0; };
  cov.slot_reuse += once(p.slot_reuse);
  cov.chunked_prefill += once(p.chunked_prompts);
  cov.graph_padding += once(p.padding_writes);
  cov.pp_gt1 += c.pp > 1 ? 1 : 0;
  cov.drafts += once(p.drafts_verified);
  cov.aborts += once(p.aborts);
  cov.abort_in_flight += once(p.aborts_in_flight);
  cov.length_cap += once(p.length_cap_ends);
  cov.preemptions += once(p.preemptions);
  cov.preempted_in_step += once(p.preempted_in_step);
  cov.steps_ahead += once(p.steps_ahead);
  cov.prefix_hits += once(p.prefix_hit_blocks);
  cov.recurrent += once(p.recurrent_rollbacks);
  cov.budget_below_k += once(run.stats.budget_below_k);
  cov.eagle_taps_relayed += once(p.taps_relayed);
  cov.eagle_default_taps += c.eagle && c.taps.empty() ? 1 : 0;
  cov.dummy_batches += once(p.dummy_batches);
  cov.kv_pulls += once(p.kv_pulls);
  cov.mla_decode += once(p.mla_decode_requests);
  cov.stop_string_trims += once(p.stop_string_trims);
  // The deployment only (the staged copies leave no probe): a stage whose host runs ahead of them.
  cov.pinned_inputs += c.pin_memory && (c.pp > 1 || (c.disaggregated && c.prefill_pp > 1)) ? 1 : 0;
}

// One case, loaded from its text as `ppspec run` would load the file; `cov` (optional) counts the
// engine paths a serving case reached.
Outcome run_case(const std::string& text, const std::string& file, const FuzzCase& c, Coverage* cov) {
  if (c.is_program) {
    const program::Program p = scenario::parse_program(text, file);
    runs::RunChoices choices;  // the strategy: the case file's [explore]
    choices.seed = c.program.seed;
    choices.record_decisions = false;
    if (cov != nullptr) ++cov->programs;
    return outcome_of(runs::execute(p, choices));
  }
  const serving::ServingRun run = run_serving(text, file, c.serving);
  if (cov != nullptr) count_paths(*cov, c.serving, run);
  return outcome_of(run.result);
}

// run_case, with an internal error of ppspec (anything but bad input, which is the generator's
// bug) as an outcome of its own class.
Outcome run_guarded(const std::string& text, const std::string& file, const FuzzCase& c, Coverage* cov) {
  try {
    // Test hook: PPSPEC_FUZZ_TEST_THROW_IF_PP=P fails every serving case of P stages as a bug would.
    const char* pp = std::getenv("PPSPEC_FUZZ_TEST_THROW_IF_PP");
    if (pp != nullptr && !c.is_program && c.serving.pp == std::atoi(pp))
      throw core::InternalError("test hook: a serving case of " + std::string(pp) + " stages");
    return run_case(text, file, c, cov);
  } catch (const core::InputError&) {
    throw;
  } catch (const std::exception& e) {
    Outcome o;
    o.internal = true;
    o.kind = kInternalErrorClass;
    o.summary = fmt::format("ppspec failed on the case with an internal error: {}", e.what());
    o.report.push_back(o.summary);
    return o;
  }
}

// Test hooks (tests/fuzz_command_test.cc): make ppspec fail the way a bug would, so that the
// handling of an internal error or a crash is proven end to end. PPSPEC_FUZZ_TEST_CRASH_AT_CASE=I
// kills the process at case I (with SIGSEGV).
void crash_hook(uint64_t index) {
  const char* v = std::getenv("PPSPEC_FUZZ_TEST_CRASH_AT_CASE");
  if (v != nullptr && std::strtoull(v, nullptr, 10) == index) std::raise(SIGSEGV);
}

}  // namespace

rc::Shrinkable<FuzzCase> shrink_while(rc::Shrinkable<FuzzCase> failing,
                                      const std::function<bool(const FuzzCase&)>& still_fails, int runs_max,
                                      Found& found, const std::function<bool()>& out_of_time) {
  bool late = false;
  for (bool progressed = true; progressed && found.shrink_runs < runs_max && !late;) {
    progressed = false;
    auto candidates = failing.shrinks();
    while (auto candidate = candidates.next()) {
      late = out_of_time && out_of_time();
      if (found.shrink_runs >= runs_max || late) break;
      ++found.shrink_runs;
      if (!still_fails(candidate->value())) continue;
      failing = std::move(*candidate);
      ++found.shrink_steps;
      progressed = true;
      break;
    }
  }
  found.capped = found.shrink_runs >= runs_max || late;
  return failing;
}

rc::Shrinkable<FuzzCase> draw(const FuzzOptions& opts, uint64_t index) {
  const uint64_t key = opts.seed * 0x9E3779B97F4A7C15ULL ^ (index + 1) * 0xBF58476D1CE4E5B9ULL;
  return gen_fuzz_case(opts.space, opts.faults)(rc::Random(key), rc::kNominalSize);
}

namespace {

constexpr int kShrinkRunsMax = 4000;

std::string case_text(const FuzzCase& c, const std::string& name, const Outcome& expect, const std::string& why) {
  // A case ppspec fails on expects what a correct ppspec gives it, as far as anyone knows: a pass.
  if (expect.internal) return case_toml(c, name, why, Expectation{core::Verdict::pass, ""});
  return case_toml(c, name, why, Expectation{expect.verdict, expect.kind});
}

// Greedy descent over RapidCheck's shrinks: take the first smaller case that fails the same way,
// until none does or `runs_max` candidates ran. Scenario and schedule shrink together: the seed and
// the policy are picks of the case like any knob.
// With --time the shrink ends with the campaign: the smallest failing case by then is kept.
rc::Shrinkable<FuzzCase> shrink(rc::Shrinkable<FuzzCase> failing, const Outcome& target, Found& found,
                                const FuzzOptions& opts, Clock::time_point t0) {
  return shrink_while(
      std::move(failing),
      [&](const FuzzCase& c) {
        return run_guarded(case_text(c, "shrinking", target, ""), "<shrinking>", c, nullptr).same_as(target);
      },
      kShrinkRunsMax, found, [&] { return opts.time_s > 0 && since(t0) >= opts.time_s; });
}

std::string file_name(const FuzzOptions& opts, const Found& f) {
  return fmt::format("{}/found-seed{}-case{}-{}.toml", opts.out_dir, opts.seed, f.case_index,
                     f.kind.empty() ? std::string(core::to_string(f.verdict)) : f.kind);
}

// Shrinks a failure, writes its file, and checks that the file, loaded from disk, fails the same way.
Found settle(const FuzzOptions& opts, const rc::Shrinkable<FuzzCase>& failing, const Outcome& outcome, uint64_t index,
             Clock::time_point t0) {
  Found f;
  f.verdict = outcome.verdict;
  f.kind = outcome.kind;
  f.internal = outcome.internal;
  f.case_index = index;
  f.found_after_s = since(t0);
  const FuzzCase original = failing.value();
  f.original = case_summary(original);
  const FuzzCase shrunk = shrink(failing, outcome, f, opts, t0).value();
  f.shrunk = case_summary(shrunk);
  f.requests = shrunk.is_program ? 0 : shrunk.serving.num_requests;
  f.ranks = shrunk.is_program ? shrunk.program.shape.ranks : shrunk.serving.dp * shrunk.serving.pp * shrunk.serving.tp;
  f.file = file_name(opts, f);
  const std::string why =
      fmt::format("Found by `ppspec fuzz --seed {}` (case {}{}), shrunk in {} steps from:\n  {}\n", opts.seed, index,
                  opts.faults.empty() ? "" : ", faults " + fmt::format("{}", fmt::join(opts.faults, ",")),
                  f.shrink_steps, f.original);
  std::filesystem::create_directories(opts.out_dir);
  std::ofstream(f.file, std::ios::binary)
      << case_text(shrunk, std::filesystem::path(f.file).stem().string(), outcome, why);
  f.command = "ppspec run " + f.file;
  // The file is the reproducer: it must fail the same way when loaded as a user would load it.
  const auto text = [&] {
    std::ifstream in(f.file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const Outcome again = run_guarded(text, f.file, shrunk, nullptr);
  if (!again.same_as(outcome))
    throw core::InternalError(fmt::format("the shrunk file {} gives {} / {}, the failure was {} / {}", f.file,
                                          core::to_string(again.verdict), again.kind, core::to_string(outcome.verdict),
                                          outcome.kind));
  f.summary = again.summary;
  std::ofstream report(std::filesystem::path(f.file).replace_extension(".report.txt"), std::ios::binary);
  report << f.command << "\n\n"
         << fmt::format("{}", fmt::join(again.report, "\n")) << "\n\nshrunk from: " << f.original
         << "\nto: " << f.shrunk << "\n"
         << (f.capped ? fmt::format("not minimal: the shrink stopped after {} runs\n", f.shrink_runs) : "");
  f.shrunk_after_s = since(t0);
  return f;
}

void print_progress(const FuzzOptions& opts, const FuzzReport& r, double elapsed, std::ostream& progress) {
  const Coverage& c = r.coverage;
  const std::string line = fmt::format(
      "{} cases, {:.0f}/s, {:.0f} s, {} failures | programs {} | pp>1 {} drafts {} graphs {} chunked {} slot-reuse {} "
      "length-cap {} aborts {} (in flight {}) preempted {} (in step {}) ahead {} prefix-hits {} recurrent {} "
      "budget<K {} eagle {} (default taps {}) dummy {} kv-pulls {} mla-decode {} stop-strings {} pinned {}",
      r.cases, elapsed > 0 ? static_cast<double>(r.cases) / elapsed : 0.0, elapsed, r.failures, c.programs, c.pp_gt1,
      c.drafts, c.graph_padding, c.chunked_prefill, c.slot_reuse, c.length_cap, c.aborts, c.abort_in_flight,
      c.preemptions, c.preempted_in_step, c.steps_ahead, c.prefix_hits, c.recurrent, c.budget_below_k,
      c.eagle_taps_relayed, c.eagle_default_taps, c.dummy_batches, c.kv_pulls, c.mla_decode, c.stop_string_trims,
      c.pinned_inputs);
  progress << (opts.live_progress ? "\r" + line + "\x1b[K" : line + "\n") << std::flush;
}

}  // namespace

FuzzReport run_campaign(const FuzzOptions& opts, std::ostream& out, std::ostream& progress) {
  PPSPEC_ASSERT(opts.shards >= 1 && opts.shard < opts.shards, "shard {}/{}", opts.shard, opts.shards);
  PPSPEC_ASSERT(opts.cases.has_value() || opts.time_s > 0, "a campaign needs --cases or --time");
  FuzzReport r;
  const Clock::time_point t0 = Clock::now();
  double next_progress = opts.live_progress ? 0.5 : 5.0;
  for (uint64_t index = opts.shard;; index += opts.shards) {
    if (opts.cases && r.cases >= *opts.cases) break;
    if (opts.time_s > 0 && since(t0) >= opts.time_s) break;
    if (core::interrupted()) {  // Ctrl-C: the cases run so far, summarised and written
      r.interrupted = true;
      break;
    }
    const rc::Shrinkable<FuzzCase> drawn = draw(opts, index);
    const FuzzCase c = drawn.value();
    const std::string name = fmt::format("fuzz-seed{}-case{}", opts.seed, index);
    const std::string text = case_text(c, name, {}, "");
    Outcome o;
    std::filesystem::create_directories(opts.out_dir);
    std::ofstream(opts.out_dir + "/current.toml", std::ios::binary) << text;  // on disk if the case crashes the process
    std::ofstream(opts.out_dir + "/current.case", std::ios::binary) << index << '\n';
    try {
      crash_hook(index);
      o = run_guarded(text, name + ".toml", c, &r.coverage);
    } catch (const core::InputError& e) {
      // The generator promises valid cases: one the loader refuses is ppspec's bug (exit 3), kept.
      std::filesystem::create_directories(opts.out_dir);
      const std::string kept = opts.out_dir + "/" + name + ".invalid.toml";
      std::ofstream(kept) << text;
      throw core::InternalError(fmt::format("a generated case the loader refuses ({}), kept as {}", e.what(), kept));
    }
    ++r.cases;
    if (o.failed()) {
      ++r.failures;
      if (opts.live_progress) progress << "\n";
      progress << fmt::format("case {} fails: {} / {}: {}\n  {}\n  shrinking...\n", index, core::to_string(o.verdict),
                              o.kind, o.summary, case_summary(c));
      r.found.push_back(settle(opts, drawn, o, index, t0));
      progress << fmt::format("  shrunk in {} steps ({} runs{}) to {}\n  {}\n", r.found.back().shrink_steps,
                              r.found.back().shrink_runs,
                              r.found.back().capped ? ", stopped at the limit: not minimal" : "", r.found.back().file,
                              r.found.back().shrunk);
      if (!opts.keep_going) break;
    }
    if (since(t0) >= next_progress) {
      print_progress(opts, r, since(t0), progress);
      next_progress = since(t0) + (opts.live_progress ? 0.5 : 5.0);
    }
  }
  r.seconds = since(t0);
  print_progress(opts, r, r.seconds, progress);
  write_summary(r, opts);
  if (opts.live_progress) progress << "\n";
  out << format_report(r);
  return r;
}

std::string format_report(const FuzzReport& r) {
  std::string s = fmt::format("{}{} failure{} in {} cases ({:.1f} s, {:.1f} cases/s)\n",
                              r.interrupted ? "interrupted (Ctrl-C), the campaign so far: " : "", r.failures,
                              r.failures == 1 ? "" : "s", r.cases, r.seconds,
                              r.seconds > 0 ? static_cast<double>(r.cases) / r.seconds : 0.0);
  const Coverage& c = r.coverage;
  s += fmt::format(
      "paths reached (cases): programs {}, pp>1 {}, drafts {}, graph padding {}, chunked prefill {}, slot reuse {}, "
      "length cap {}, aborts {} (in flight {}), preemptions {} (in step {}), steps scheduled ahead {}, "
      "prefix-cache hits {}, recurrent {}, adaptive budget below K {}, EAGLE taps relayed {}, EAGLE default taps {}, "
      "dummy steps {}, "
      "KV pulled {}, TRITON_MLA decode path {}, stop strings inside a run {}, pinned inputs before the last stage "
      "{}\n",
      c.programs, c.pp_gt1, c.drafts, c.graph_padding, c.chunked_prefill, c.slot_reuse, c.length_cap, c.aborts,
      c.abort_in_flight, c.preemptions, c.preempted_in_step, c.steps_ahead, c.prefix_hits, c.recurrent,
      c.budget_below_k, c.eagle_taps_relayed, c.eagle_default_taps, c.dummy_batches, c.kv_pulls, c.mla_decode,
      c.stop_string_trims, c.pinned_inputs);
  for (const Found& f : r.found)
    s += fmt::format(
        "{} {} at case {} after {:.1f} s, shrunk after {:.1f} s{} ({}, {}): {}\n  {}\n  {}\n",
        f.internal ? "ERROR" : "FAIL", f.internal ? f.kind : fmt::format("{} / {}", core::to_string(f.verdict), f.kind),
        f.case_index, f.found_after_s, f.shrunk_after_s,
        f.capped ? fmt::format(" (not minimal: stopped after {} runs)", f.shrink_runs) : "",
        core::count_of(f.requests, "request"), core::count_of(f.ranks, "rank"), f.summary, f.shrunk, f.command);
  return s;
}

}  // namespace ppspec::fuzzer
