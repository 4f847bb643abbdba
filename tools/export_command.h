// `ppspec export --flight-recorder TRACE -o DIR`: the trace as PyTorch Flight Recorder dumps, one per
// rank, JSON and pickle (traces/fr_writer.h), which `ppspec check DIR` and PyTorch's fr_trace read;
// as PyTorch writes them by default (a ring of 2,000 records, no `started` states, coalescing's fast
// path) or as its settings make it write them (--fr-buffer, --fr-timing, --fr-coalesced-members,
// --fr-gloo, --fr-at/--fr-skew for dumps taken while the job runs).
// `ppspec export --perfetto INPUT -o OUT.json`: a Chrome trace-event file that Perfetto and
// chrome://tracing open. A process per rank, a track per host thread and stream (a Flight Recorder
// dump: per process group); communication operations and kernels as slices named by what they are
// and their labels; each pairing as flow arrows between its operations; findings as instant events.
// INPUT: a simulator or GPU trace, a GPU hang dump, or a folder of Flight Recorder dumps.
#pragma once

#include <iosfwd>
#include <string>

#include "traces/fr_writer.h"

namespace ppspec::tools {

constexpr size_t kFrBufferDefault = 2000;  // TORCH_FR_BUFFER_SIZE's default

struct ExportArgs {
  std::string input{};
  std::string out{};
  std::string scenario{};        // serving traces: as for `check`
  bool flight_recorder = false;  // --flight-recorder: OUT is a folder of Flight Recorder dumps (traces/fr_writer.h)
  // How PyTorch is set to write them; the defaults are PyTorch's.
  traces::FrWriteOptions fr{traces::FrBackend::nccl, kFrBufferDefault, false, true, std::nullopt, 0, 0};
};

// Exit status: 0 written, 2 bad input.
int export_command(const ExportArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
