#!/usr/bin/env bash
# Whether the program generator still makes the same programs: the dump tool of this tree
# (tools/generator_dump.cc) against dumps made before a change, mode by mode.
#   scripts/dev/generator_compare.sh DUMP_BINARY BEFORE_DIR    (BEFORE_DIR/gen_before{,_rc}.txt)
# seeded: seeds 1..300 under the fidelity options (max_ranks 8, 4, 2) and the Flight Recorder
# options per disturbance; rc: fixed-key samples of the RapidCheck generators and their first shrinks.
set -euo pipefail
bin=$1
before=$2
status=0
for mode in seeded rc; do
  suffix=$([ "$mode" = seeded ] && echo "" || echo "_$mode")
  want=$(md5sum < "$before/gen_before$suffix.txt" | cut -d' ' -f1)
  got=$("$bin" "$mode" | md5sum | cut -d' ' -f1)
  lines=$("$bin" "$mode" | wc -l)
  if [ "$want" = "$got" ]; then verdict=identical; else verdict=DIFFERENT; status=1; fi
  echo "$mode: $lines lines, md5 before $want, after $got: $verdict"
done
exit $status
