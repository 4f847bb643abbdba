#!/usr/bin/env bash
# Installs the Debian 12 packages ppspec builds with, when any is missing (run as root).
set -euo pipefail
# clang and libclang-rt-14-dev (the runtimes of libFuzzer and the sanitizers, which Debian only
# recommends) build the fuzz preset (libfuzzer/README.md). python3 runs the source checks of
# scripts/dev/ that ctest holds (function_lengths, tidy); clang-format is tidy's layout check.
packages=(g++ cmake ninja-build libboost-fiber-dev libboost-context-dev librapidcheck-dev libgtest-dev libfmt-dev
          libtomlplusplus-dev nlohmann-json3-dev libcli11-dev libbenchmark-dev libmimalloc-dev clang libclang-rt-14-dev python3
          clang-format)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ppspec: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Node.js and npm run the test that opens `ppspec export --perfetto` files with the trace engine of
# Chrome's DevTools (scripts/dev/trace_loader_test.sh); Debian's, where the machine has none.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "ppspec: installing nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends nodejs npm
fi
