#!/usr/bin/env bash
# README command 1: install what is missing, build, run the scenario suite on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake --preset default
cmake --build --preset default
./build/default/tools/ppspec run scenarios/programs/*.toml
./build/default/tools/ppspec run scenarios/serving/*.toml
./build/default/tools/ppspec run scenarios/regressions/*.toml
./build/default/tools/ppspec run scenarios/found/*.toml
