// A fuzzing campaign (`ppspec fuzz`): a deterministic stream of generated serving and program
// cases, each run on the simulator with every monitor and oracle; a failing case is shrunk, scenario and schedule
// together, to a minimal scenario file that reproduces the same verdict and kind.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "scenario/fuzzer/death.h"
#include "scenario/fuzzer/fuzz_case.h"
#include "scenario/fuzzer/space.h"

namespace ppspec::fuzzer {

struct FuzzOptions {
  Space space;
  std::vector<std::string> faults;  // switched on in every case
  uint64_t seed = 1;                // of the case stream
  std::optional<uint64_t> cases;    // stop after this many cases of this shard ...
  double time_s = 0;                // ... or after this many seconds (0: no limit); one of the two
  uint64_t shard = 0, shards = 1;   // case i runs in shard i mod shards
  std::string out_dir = "fuzz-out";
  bool keep_going = false;     // shrink and keep every failure, not only the first
  bool live_progress = false;  // rewrite one progress line (a terminal) instead of plain lines
};

// Engine paths the cases reached, counted over cases (a case counts once per path it reached:
// serving/paths_reached.h says what each path is).
struct Coverage {
  uint64_t slot_reuse = 0;          // a req-state row held by a second request
  uint64_t length_cap = 0;          // a request ended at max_model_len
  uint64_t abort_in_flight = 0;     // an abort reached a request while its step was in flight
  uint64_t aborts = 0;              // an abort reached the engine core
  uint64_t graph_padding = 0;       // a graph replayed with padding rows
  uint64_t chunked_prefill = 0;     // a prompt prefilled over several steps
  uint64_t drafts = 0;              // draft tokens verified
  uint64_t pp_gt1 = 0;              // cases with more than one stage
  uint64_t programs = 0;            // program scenarios
  uint64_t preemptions = 0;         // a request preempted (and resumed)
  uint64_t preempted_in_step = 0;   // ... out of the step being scheduled, which held its row
  uint64_t steps_ahead = 0;         // a step scheduled while the request's previous one was in flight
  uint64_t prefix_hits = 0;         // a request reused blocks of the prefix cache
  uint64_t recurrent = 0;           // a recurrent state rolled back past a rejected draft
  uint64_t budget_below_k = 0;      // an adaptive draft budget below K at some step
  uint64_t eagle_taps_relayed = 0;  // EAGLE taps sent to a later stage
  uint64_t eagle_default_taps = 0;  // EAGLE with no taps given: EAGLE-3's default low, middle and high layers
  uint64_t dummy_batches = 0;       // dp > 1: a replica ran a dummy batch while another served
  uint64_t kv_pulls = 0;            // disaggregation: the decode instance pulled a prompt's KV
  uint64_t mla_decode = 0;          // TRITON_MLA: a request took the decode path
  uint64_t stop_string_trims = 0;   // a stop string ended a request inside a step's accepted run
  uint64_t pinned_inputs = 0;       // inputs staged through pinned buffers by a stage before the last
};

// The class of a case that ends in an internal error of ppspec (a broken invariant, an exception,
// not a verdict), and of one that crashed a worker process (--jobs): findings of their own.
inline constexpr const char* kInternalErrorClass = "internal-error";
inline constexpr const char* kCrashClass = "crash";

struct Found {
  core::Verdict verdict = core::Verdict::pass;
  std::string kind;       // the finding's kind, or kInternalErrorClass / kCrashClass
  bool internal = false;  // ppspec failed (an internal error or a crash): no verdict
  std::string summary;    // the first finding of the shrunk case
  std::string file;       // the shrunk scenario file
  std::string command;    // reproduces it
  uint64_t case_index = 0;
  double found_after_s = 0;      // wall time from the start to the failing case
  double shrunk_after_s = 0;     // and to the shrunk file
  int shrink_steps = 0;          // smaller failing cases taken
  int shrink_runs = 0;           // candidates run
  bool capped = false;           // the shrink stopped at its run limit: not minimal
  std::string original, shrunk;  // case_summary() of each
  int requests = 0;              // of the shrunk case (0: a program)
  int ranks = 0;
};

struct FuzzReport {
  bool interrupted = false;  // stopped by Ctrl-C before its --cases or --time: a summary so far
  uint64_t cases = 0;
  uint64_t failures = 0;
  double seconds = 0;
  Coverage coverage;
  std::vector<Found> found;
};

// Runs the campaign; progress on `progress`, the summary on `out`. A case that ends in an internal
// error of ppspec is a finding of its own class, shrunk within it. Before each case the campaign
// writes it to OUT/current.toml, so that a case that crashes the process is on disk. Throws
// core::InternalError when a generated case does not load (a generator bug, its file kept in out_dir).
FuzzReport run_campaign(const FuzzOptions& opts, std::ostream& out, std::ostream& progress);

// "1 failure in 1234 cases (56.7 cases/s) ..." and one line per failure.
std::string format_report(const FuzzReport& r);

// Greedy descent over a failing case's shrinks: the first smaller one that `still_fails` is taken,
// until none is, `runs_max` candidates ran, or `out_of_time` says so before a candidate runs
// (counted in `found`, `capped` when a limit stopped it).
rc::Shrinkable<FuzzCase> shrink_while(rc::Shrinkable<FuzzCase> failing,
                                      const std::function<bool(const FuzzCase&)>& still_fails, int runs_max,
                                      Found& found, const std::function<bool()>& out_of_time = {});

// The case stream: case i of a campaign is drawn from its own seed, whatever ran before it.
rc::Shrinkable<FuzzCase> draw(const FuzzOptions& opts, uint64_t index);

// A case that crashed a worker process (--jobs): its file kept, shrunk by rerunning candidates in
// child processes (`PPSPEC run FILE`) while they die the same death, at most `runs_max` of them.
Found settle_crash(const FuzzOptions& opts, uint64_t index, const Death& death, const std::string& ppspec,
                   int runs_max);

// OUT/summary.json of a campaign, and the merge of several (`ppspec fuzz --merge DIR...`, the shards
// of one campaign run apart): counts and paths add up, the time is the longest shard's. Throws
// core::InputError for a missing or malformed summary.
void write_summary(const FuzzReport& r, const FuzzOptions& opts);
FuzzReport read_summary(const std::string& dir);
FuzzReport merge(const std::vector<FuzzReport>& parts);

}  // namespace ppspec::fuzzer
