// A real job's Flight Recorder dumps as a program scenario (`ppspec import`): the job's ranks, its
// process groups as communicators, and each rank's operations in its dump's record order, so that
// `ppspec run` replays the job's communication on the simulator, `--seeds` explores its other
// schedules, and the user can edit the file to try a fix.
//
// What a dump does not hold, the scenario assumes, and Imported::notes says so:
// * threads: one per rank, calling in record order, which is the order NCCL received the calls
//   whichever of the job's threads made them (separate threads would let the simulator reorder
//   calls on a shared group); each operation's comment names the dump's thread.
// * streams: the execution model `ppspec check` assumes (verify/dumps/fr_streams.h): by default
//   PyTorch's synchronous calls, each waiting for the ones before it unless the dumps' states and
//   times show it did not (then on another stream, after an event of each stream it did wait for).
// * connections: made when a communicator is created (runtime_connect = false). A dump records a
//   call before NCCL connects, so a host blocked at first contact (R1) and one that went on look
//   alike; a rank that recorded calls past a first contact evidently went on.
// * broadcast roots: every broadcast's root is its group's first member (pairing needs the members to
//   agree on a root, not which one it is).
// * labels: a collective is labelled with its call site only where every member's dump names the same
//   one at that position (pickle dumps carry stacks, JSON dumps do not): labels take part in pairing,
//   and NCCL never compares call sites. Every operation's record, state and call site is a comment
//   beside it.
// A dump whose ring buffer dropped records is refused: the scenario needs each rank's order from the
// start. Operations without a counterpart in program scenarios (reduce_scatter, reduce, several
// tensors in one call, an all_to_all of uneven splits) are refused, naming the record. A coalesced
// group of collectives (an uneven all_gather's broadcasts) is a group of them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "program/program.h"
#include "traces/flight_recorder.h"
#include "verify/dumps/fr_streams.h"

namespace ppspec::importer {

struct Imported {
  program::Program program;               // expect: left as pass; the caller sets what the run gives
  std::vector<std::string> notes;         // what the scenario assumes where the dumps are silent
  size_t operations = 0;                  // communication operations imported, over all ranks
  std::vector<std::string> stream_names;  // every stream a rank used, in the order first used
};

struct ImportOptions {
  // The dumps were exported from a ppspec trace (`ppspec export --flight-recorder`, traces/fr_writer.h),
  // whose thread names are the streams the operations ran on ("rank0.s1"): keep those streams.
  bool recorded_streams = false;
  // How the job made its calls (verify/dumps/fr_streams.h): the model `ppspec check` assumes too.
  verify::FrCalls calls = verify::FrCalls::synchronous;
};

// `name` names the scenario; `set.where` (the folder or file the dumps came from) goes in its
// description.
Imported import_flight_recorder(const traces::FrDumpSet& set, const std::string& name,
                                const ImportOptions& options = {});

}  // namespace ppspec::importer
