#!/usr/bin/env bash
# README command 1: install what is missing, build, run the scenario suite on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake --preset default
# The tool only: the tests and benchmarks are scripts/test.sh's to build, in this same tree.
cmake --build --preset default --target ppspec
./build/default/tools/ppspec run scenarios/programs/*.toml
./build/default/tools/ppspec run scenarios/serving/*.toml
./build/default/tools/ppspec run scenarios/regressions/*.toml
./build/default/tools/ppspec run scenarios/found/*.toml
