#!/usr/bin/env bash
# README command 2 (and CI): build and run every test, in the default and the ASan+UBSan presets.
# The ASan preset's ctest also replays every fuzz target's checked-in corpus and findings under both
# sanitizers (libfuzzer/CMakeLists.txt); fuzzing for new inputs is scripts/dev/libfuzzer.sh, with clang's
# libFuzzer (libfuzzer/README.md): long fuzzing belongs there, not in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
for preset in default asan; do
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
