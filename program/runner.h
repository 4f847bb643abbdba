// Runs a program scenario over the runtime interface: one actor per declared host thread, each
// issuing its rank's operations in order.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event.h"
#include "core/runtime.h"
#include "core/verdict.h"
#include "program/program.h"
#include "sim/run_config.h"

namespace ppspec::program {

// Declares the program's communicators, streams and buffers on `rt` and spawns its actors.
// The caller runs `rt`. `rt` must outlive nothing of `p`: `p` must outlive the run.
void install(const Program& p, core::Runtime& rt);

// Runs the program on the simulator.
core::RunResult run_on_sim(const Program& p, const sim::RunConfig& opts);

}  // namespace ppspec::program
