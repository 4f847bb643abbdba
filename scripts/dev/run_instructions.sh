#!/usr/bin/env bash
# Instructions of a whole `ppspec run` of each scenario, before and after a change (callgrind):
# counts that do not drift with the machine's speed, for changes too small for this VM's timings.
#   scripts/dev/run_instructions.sh PPSPEC_BEFORE PPSPEC_AFTER SCENARIO...
exec "$(dirname "$0")/bench_instructions.sh" --run "$@"
