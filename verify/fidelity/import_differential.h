// `ppspec import` proven against the simulator: the Flight Recorder differential's generated jobs
// (verify/fidelity/fr_differential.h: 2 to 8 ranks, several communicators, one disturbance each) are
// simulated and their dumps written as PyTorch writes them; the dumps are then imported
// (scenario/importer/fr_import.h) and the imported scenario run. Where `check` places the failure in the
// communication order — a misalignment, an operation never matched, a cycle — or passes, the
// imported run must give the same verdict class. A stall that no order explains (a kernel, a host
// call, a module load the dumps do not hold) is out of the import's reach by construction: counted
// and shown, not scored.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "verify/fidelity/fr_differential.h"

namespace ppspec::fidelity {

struct ImportCase {
  FrCase dumps;              // the job, its simulated verdict and check's verdict on its dumps
  std::string import_class;  // the imported scenario's run, as fr_class reads it
  std::string import_summary;
  size_t operations = 0;  // imported
  bool in_scope = false;  // check's class is one the communication order decides
  bool as_job = false;    // the job's (simulated) class, where check may give another
  bool agree = false;     // in scope: the same class; out of scope: true
  std::string name, why;  // for run_cases
};

// Check classes the order of operations decides, so that an import must reproduce them.
bool import_reproduces(const std::string& check_class);

ImportCase run_import_case(const FrDifferentialOptions& o, uint64_t index);

// Runs every case (OUT/programs/, OUT/disagreements/, OUT/summary.json) and writes OUT/import.md.
// Exit status: 0 when every case in scope agreed, 1 otherwise.
int import_differential_main(const FrDifferentialOptions& o, std::ostream& out);

}  // namespace ppspec::fidelity
