#!/usr/bin/env bash
# Whether a change left behaviour as it was: every committed scenario run by the binary before and
# by the binary after (scripts/dev/behaviour_snapshot.sh), traces and `run --json` compared byte for byte.
#   scripts/dev/behaviour_compare.sh BINARY_BEFORE BINARY_AFTER [WORK_DIR]
# Prints what it compared and every difference; exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$1
after=$2
work=${3:-$(mktemp -d)}
rm -rf "$work/before" "$work/after"
scripts/dev/behaviour_snapshot.sh "$before" "$work/before"
scripts/dev/behaviour_snapshot.sh "$after" "$work/after"
files=$(find "$work/before" -type f | wc -l)
traces=$(find "$work/before" -name '*.jsonl' | wc -l)
bytes=$(cat "$work/before"/*.jsonl | wc -c)
echo "compared $files files ($traces traces, $bytes trace bytes) of $(find "$work/before" -name '*.status' | wc -l) scenarios"
if diff -r "$work/before" "$work/after"; then
  echo "identical: every trace, every --json report, every exit status and stderr"
else
  echo "DIFFERENT"
  exit 1
fi
