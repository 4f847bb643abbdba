// The NCCL profiler plugin and `ppspec watch` proven against the simulator, without GPUs: a
// scenario (a committed program or serving scenario, or a generated program with one
// disturbance) runs on the simulator with the adapter of watch/nccl_profiler/sim_adapter.h driving the
// real plugin library as NCCL would; the plugin writes one trace per rank as in a real job; a
// Watcher follows the traces as they are written (after every call into the plugin) and gives its
// reports and its verdict. Agreement: the watcher's verdict class equals the simulator's, with the
// same culprit (rank, communicator, p2p or collective, position) wherever either blames one; a
// misalignment is reported no later than the simulator found it; a run the simulator passes gets
// no finding; and the plugin recorded exactly the operations NCCL is told of, each completed
// where the simulator completed it.
//
// What NCCL never tells a profiler is said, not hidden: a deadlock through a host call (a module
// load, a sync) shows as communication that waits; a verdict about memory or outputs (a hazard,
// a padding violation, ...) is invisible, so the watcher must only not claim a communication
// finding the simulator did not make; a collective of a one-rank communicator is never recorded.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/verdict.h"

namespace ppspec::fidelity {

struct PluginCase {
  uint64_t index = 0;
  std::string name, file, kind, disturbance;
  int ranks = 0;
  std::string sim_class, watch_class;  // fr_class of each side's first finding
  core::Culprit sim_culprit, watch_culprit;
  std::string sim_summary, watch_summary;
  core::Time sim_found = -1, watch_reported = -1;  // the simulator's finding; the watcher's first misalignment report
  uint64_t sim_posted = 0, recorded = 0;  // operations the simulator posted (NCCL-visible), the plugin recorded
  uint64_t told = 0;                      // operations the adapter told the plugin of as posted
  bool in_time = true;                    // a misalignment reported no later than the simulator's finding
  bool via_host_call = false, via_connect = false, data_lost = false, not_visible = false;
  bool mismatch_unseen = false;  // of labels only, or an all_to_all against a collective: NCCL sees no pairing there
  bool emulated = false;         // on_mismatch = "emulate": the simulator reports what a mismatch leads to
  bool not_yet_or_never =
      false;  // the simulator's unmatched operation, seen as a cycle through a counterpart not (yet) posted
  bool agree = false;
  std::string why;
};

struct PluginDifferentialOptions {
  uint64_t programs = 2000;
  uint64_t seed = 1;
  int max_ranks = 8;
  int interface = 5;  // the plugin table the adapter drives: 5 (NCCL 2.26-2.28) or 6 (2.29 on)
  std::string out;    // OUT/cases/ while a case runs; OUT/disagreements/, OUT/nccl-profiler.md, OUT/summary.json
};

// A committed scenario file (program or serving), run with seed 1 through plugin and watcher; its
// files (the plugin's traces, the merged job trace) under `dir`.
PluginCase compare_on_plugin(const std::string& file, const std::string& dir, int interface = 5);
// Generated program `index` of the options' seed, with one disturbance.
PluginCase run_plugin_case(const PluginDifferentialOptions& o, uint64_t index);
// Every case, a progress line per hundred, the table OUT/nccl-profiler.md. Exit 0 when all agree.
int plugin_differential_main(const PluginDifferentialOptions& o, std::ostream& out);
// The committed scenarios named, one table row each, into `table` (markdown). Exit 0 when all agree.
int plugin_scenarios_main(const std::vector<std::string>& files, const std::string& out_dir, const std::string& table,
                          std::ostream& out);

}  // namespace ppspec::fidelity
