// `ppspec check` proven against the simulator: generated program scenarios (2 to 8 ranks, several
// communicators of varying members, p2p and collectives, kernels, events and graphs around them),
// each with exactly one disturbance — an operation dropped, posted twice, with another count, dtype,
// root or peer, or two communicators' rounds in the other order on one rank — run on the simulator
// with a trace, the trace exported as Flight Recorder dumps (traces/fr_writer.h) and written as
// PyTorch writes them, both formats read back and checked. `check` must give the simulator's
// verdict class and culprit (rank, communicator, position) and pass exactly when it passes.
//
// What a dump cannot show is said, not hidden: a broadcast's root and an operation's graph capture
// are not in a Flight Recorder entry, so a run the simulator stops at such a mismatch must only not
// pass, at that operation. Programs carry no labels (NCCL ignores them; dumps do not record them).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "scenario/generator/fr_shapes.h"
#include "traces/fr_writer.h"
#include "verify/dumps/fr_streams.h"

namespace ppspec::fidelity {

struct FrCase {
  uint64_t index = 0;
  generator::FrShape shape = generator::FrShape::async;
  std::string name;
  std::string file;  // the program, kept under OUT/programs/
  int ranks = 0;
  std::string disturbance;
  std::string kind;  // the disturbance's kind: none, drop, double, count, dtype, root, peer, invert
  core::RankId disturbed_rank = -1;
  std::string sim_class, check_class;
  std::string sim_end_class;  // where the simulated run ended (past an emulated mismatch: what it caused)
  core::Culprit sim_culprit, check_culprit;
  std::string sim_summary, check_summary;
  bool invisible = false;  // the simulator's finding is of what a dump does not record (root, capture)
  bool via_host_call = false;
  bool data_lost = false;  // the simulator noted data lost to a connection wired wrongly at first contact  // the
                           // simulator's deadlock runs through a host call a dump does not record
  // Agreement short of the simulator's whole answer, but honest: check named no culprit where the
  // simulator named one (cannot_tell), or passed, saw operations in flight or a stall it could not
  // date, where the dumps cannot show the simulator's failure (unseen: Gloo's, a snapshot's, a
  // wrapped ring's).
  bool cannot_tell = false, unseen = false;
  bool agree = false;
  std::string why;  // a disagreement, in words
};

// "pass", "misaligned" (a mismatched pairing), "unmatched" (an operation whose partner never
// comes), "cycle" (a deadlock across communicators), "stall" (stuck, no communication order
// explains it), "starvation" (a request the scheduler never runs: nothing is stuck), or the
// verdict's own name for the rest (invalid-usage, ...).
std::string fr_class(const core::Finding* first, core::Verdict v);
// Whether a deadlock's chain passes through a host thread blocked in something other than
// communication (a module load, a sync: what neither a dump nor NCCL's profiler sees).
bool through_host_call(const core::Finding& f);
// Whether a deadlock's cycle is made only of host threads blocked in first-contact setup (R1).
bool only_first_contacts(const core::Finding& f);
// Whether dumps' class `dumps_class` is what a simulated deadlock (`sim`, its first finding) looks
// like from the dumps: a cycle through a host wait no dump records shows as its communication part,
// which waits on nothing posted (a stall, an unmatched operation, or a cycle).
bool dumps_see_host_cycle(const core::Finding& sim, const std::string& sim_class, const std::string& dumps_class);

struct FrDifferentialOptions {
  uint64_t programs = 2000;
  uint64_t seed = 1;
  std::string out;  // OUT/programs/, OUT/disagreements/, OUT/flight-recorder.md
  int max_ranks = 8;
  generator::FrShape shape = generator::FrShape::async;  // the family of programs and of dumps
};

// How case `index` of a family has its dumps written (PyTorch's defaults, but for what the family
// is about: a small ring, Gloo's form, a dump while running, started states for async), and read.
// `start_ns`: when the last rank made its first call; `end_ns`: when the run ended.
traces::FrWriteOptions fr_write_options(generator::FrShape shape, uint64_t index, int64_t start_ns, int64_t end_ns);
verify::FrCalls fr_read_calls(generator::FrShape shape);

// One program: generate, simulate, export, check, compare.
FrCase run_fr_case(const FrDifferentialOptions& o, uint64_t index);
// A program scenario file: simulate it (seed 1) with its trace in `dir`, export the dumps there as the
// family writes them, check them and compare. tests/fr_differential/ keeps the cases that once
// disagreed.
FrCase compare_on_dumps(const std::string& file, const std::string& dir,
                        generator::FrShape shape = generator::FrShape::async, uint64_t index = 0);

}  // namespace ppspec::fidelity

namespace ppspec::fidelity {

// Runs every case, prints a progress line, keeps every program under OUT/programs/ and each
// disagreement's program, dumps and both
// reports under OUT/disagreements/NAME/, and writes OUT/flight-recorder.md and OUT/summary.json.
// Exit status: 0 when every case agreed, 1 when one did not.
int fr_differential_main(const FrDifferentialOptions& o, std::ostream& out);
// Every family in turn, each into OUT/FAMILY/, and OUT/flight-recorder.md: the families side by side.
int fr_differential_all_main(const FrDifferentialOptions& o, std::ostream& out);

}  // namespace ppspec::fidelity
