#!/usr/bin/env bash
# README command 2 (and CI): build and run every test, in the default and the ASan+UBSan presets.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install_deps.sh
for preset in default asan; do
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
