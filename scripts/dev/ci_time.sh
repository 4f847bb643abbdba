#!/usr/bin/env bash
# How long CI takes: clones the committed tree into a fresh folder and runs the README's second
# command (= .ci/run) there, timing each phase. Writes docs/evidence/ci-time/fresh-clone.txt (or $1).
# The machine's cores and CPU are recorded beside the figures; CI's own machine has 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/ci-time/fresh-clone.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/clone"
log="$work/test.log"
start=$(date +%s)
status=0
(cd "$work/clone" && ./scripts/test.sh) 2>&1 | while IFS= read -r line; do echo "$(( $(date +%s) - start )) $line"; done > "$log" || status=$?
total=$(( $(date +%s) - start ))
# A phase starts where its first line appears: the builds at each "cmake --preset" configure, the
# test runs at ctest's "Test project", the fuzz step at its first "== ".
phase() { grep -m1 -n -- "$1" "$log" | sed -E 's/^[0-9]+:([0-9]+) .*/\1/'; }
{
  echo "ppspec CI time from a fresh clone of $(git rev-parse --short HEAD) ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "exit status of scripts/test.sh: $status"
  echo "total: ${total} s"
  echo "seconds from the start at which each phase began:"
  grep -n "Test project\|tests passed\|Total Test time\|== fuzz_scenario: replaying\|libfuzzer.sh: \|-- Configuring done\|libfuzzer_replay_.*Passed" "$log" | sed -E -e 's/^[0-9]+:/  /' -e 's/Test #[0-9]+: //'
} > "$out"
if [[ $status -ne 0 ]]; then
  # What failed, so that a failing run is not only a number.
  { echo "what failed:"; grep -E '\*\*\*Failed|FAILED|error:|Error ' "$log" | head -n 40 | sed 's/^/  /'; } >> "$out"
  cp "$log" "${out%.txt}.log"
fi
cat "$out"
exit "$status"
