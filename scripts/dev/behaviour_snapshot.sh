#!/usr/bin/env bash
# Behaviour to compare before and after a change that must not alter it (a refactor): every
# committed scenario run once on the simulator with its trace written, and what `ppspec run --json`
# printed. Compare two snapshots with `diff -r` (or `cmp` file by file): traces byte for byte.
#   scripts/dev/behaviour_snapshot.sh PPSPEC_BINARY OUT_DIR
set -euo pipefail  # pipefail: the run's exit status, not sed's, is recorded
cd "$(dirname "$0")/../.."
bin=$(realpath "$1")
out=$2
mkdir -p "$out"
n=0
while IFS= read -r -d '' f; do
  name=$(echo "${f#scenarios/}" | tr '/' '_')
  name=${name%.toml}
  status=0
  # wall_ms is the one field that is not the run's own: it is dropped.
  "$bin" run "$f" --json --trace "$out/$name.jsonl" 2> "$out/$name.err" | sed '/"wall_ms"/d' > "$out/$name.json" || status=$?
  echo "$status" > "$out/$name.status"
  n=$((n + 1))
done < <(find scenarios -name '*.toml' ! -path 'scenarios/spaces/*' -print0 | sort -z)
echo "$n scenarios recorded in $out"
