#!/usr/bin/env bash
# Instructions of a whole `ppspec run` of each scenario, before and after a change, counted by
# callgrind (scripts/instruction_shares.sh): counts that do not drift with the machine's speed, for
# changes too small for this VM's timings to show.
#   scripts/run_instructions.sh PPSPEC_BEFORE PPSPEC_AFTER SCENARIO...
set -euo pipefail
(($# >= 3)) || { echo "usage: scripts/run_instructions.sh PPSPEC_BEFORE PPSPEC_AFTER SCENARIO..." >&2; exit 2; }
before=$1 after=$2
shift 2
here=$(dirname "$0")
total() { "$here/instruction_shares.sh" -- "$1" run "$2" | sed -n 's/^total: \([0-9,]*\) instructions$/\1/p' | tr -d ,; }
printf '%-48s %15s %15s %s\n' scenario before after after/before
for s in "$@"; do
  b=$(total "$before" "$s")
  a=$(total "$after" "$s")
  printf '%-48s %15s %15s %.4f\n' "$s" "$b" "$a" "$(python3 -c "print($a / $b)")"
done
