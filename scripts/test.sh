#!/usr/bin/env bash
# README command 2 (and CI): build and run every test, in the default and the ASan+UBSan presets,
# then replay the fuzz corpus and fuzz each reader for a bounded time (libfuzzer/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
for preset in default asan; do
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
# 15 s of fuzzing per target, two targets at a time on CI's 2 cores, plus the fuzz preset's build;
# the corpus and every past finding are replayed first, so each fixed crash stays fixed.
./scripts/libfuzzer.sh --ci
