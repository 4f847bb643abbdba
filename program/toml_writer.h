// Writes a program back as a scenario file, so that a generated counterexample can be saved,
// read, and re-run with `ppspec run`.
#pragma once

#include <string>

#include "program/program.h"

namespace ppspec::program {

std::string to_toml(const Program& p);

}  // namespace ppspec::program
