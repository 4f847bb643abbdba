#!/usr/bin/env bash
# Issue 24's fuzzing evidence: a clean campaign over the whole default space (preemption, aborts in
# flight, stop tokens and length caps included) must find nothing; with each of the issue's faults
# switched on, a campaign must find it and shrink it to a scenario file.
#   scripts/issue24_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_SECONDS] [BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
cases=${2:-20000}
seconds=${3:-120}
bin=${4:-build/default/tools/ppspec}
work=$(mktemp -d)
{
  echo "# issue 24 fuzzing: $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
  echo
  echo "## clean: $bin fuzz --cases $cases --seed 24 --jobs 2"
  "$bin" fuzz --cases "$cases" --seed 24 --jobs 2 --out "$work/clean" 2>&1 | tail -3
  for fault in cap_before_stop preempt_keeps_spec_tokens late_output_after_preempt no_draft_lookahead_slots abort_scan_current_batch; do
    echo
    echo "## fault $fault: $bin fuzz --faults $fault --time ${seconds}s --seed 24"
    "$bin" fuzz --faults "$fault" --time "${seconds}s" --seed 24 --out "$work/$fault" 2>&1 | tail -4
    for f in "$work/$fault"/found-*.toml; do
      [ -e "$f" ] || continue
      echo "shrunk file: $(grep -c . "$f") lines; it reruns as:"
      "$bin" run "$f" 2>&1 | head -1
    done
  done
} > "$out"
rm -rf "$work"
