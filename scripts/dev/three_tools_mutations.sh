#!/usr/bin/env bash
# Proof that the three-tool comparison's tests (scripts/dev/three_tools_test.py) can fail: each mutation
# breaks one rule of the RAS judgement or of the grading, on a copy of the scripts; the test must
# fail on every one. Writes OUT (default docs/evidence/three-tools-test-mutations/mutations.txt).
#   scripts/dev/three_tools_mutations.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/three-tools-test-mutations/mutations.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mutate() {  # file, sed expression, description
  rm -rf "$work/scripts" && cp -r scripts "$work/scripts"
  sed -i "$2" "$work/scripts/$1"
  if cmp -s "$work/scripts/$1" "scripts/$1"; then echo "$3: the mutation matched nothing (script out of date)"; exit 1; fi
  if python3 "$work/scripts/dev/three_tools_test.py" > "$work/log" 2>&1; then echo "$3: NOT CAUGHT"
  else echo "$3: caught: $(grep -m1 -E 'FAIL|Error' "$work/log")"; fi
}
{
  echo "# scripts/dev/three_tools_mutations.sh (tree $(git rev-parse --short HEAD)): each mutation must be caught"
  mutate ras_poll.py 's/def judge(polls, repeats=3)/def judge(polls, repeats=1)/' "RAS: one report not clean is a finding"
  mutate ras_poll.py 's/bad_rows = \[r for r in rows if r != ("RUNNING", "OK")\]/bad_rows = []/' "RAS: a MISMATCH row is clean"
  mutate ras_poll.py 's/return text\[3:\] if text.startswith("OK\\n") else text/return text/' "RAS: the JSON answer keeps SET FORMAT's OK"
  mutate three_tools_table.py 's/if answer\["named"\] == {truth\["rank"\]}/if truth["rank"] in answer["named"]/' "grade: naming both ranks is right"
  mutate three_tools_table.py 's/if graded == "-" and result\["exit"\] != 0:/if False:/' "grade: a failed clean job passes"
  mutate three_tools_table.py 's/return "\*\*false finding\*\*"/return "-"/' "grade: a report on the clean run is no false finding"
} > "$out"
cat "$out"
if grep -q 'NOT CAUGHT\|matched nothing' "$out"; then exit 1; fi
