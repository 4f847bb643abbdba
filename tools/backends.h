// The backends a command runs on, as the command line names them: parsed once where a command
// starts, and decided on as enums from there.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ppspec::tools {

// `ppspec run --backend`, `ppspec fuzz --backend` (sim only).
enum class RunBackend : uint8_t { sim, gpu, both };
std::optional<RunBackend> parse_run_backend(std::string_view s);

// `ppspec fidelity --backend`: the simulator alone, against GPUs (now, or as kept), or a reader's
// differential (Flight Recorder dumps, import, the NCCL profiler plugin).
enum class FidelityBackend : uint8_t { sim, both, recorded, flight_recorder, nccl_profiler, import };
std::optional<FidelityBackend> parse_fidelity_backend(std::string_view s);

}  // namespace ppspec::tools
