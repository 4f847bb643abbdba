#!/usr/bin/env bash
# The scheduler faults' scenarios, as docs/verification.md quotes them: each fault's regression scenario
# and its twin (seed 1: verdict and first report), and the preemption, abort and lookahead serving scenarios with how often they
# preempted, fenced a preempted request's blocks for a step in flight, and aborted in flight
# (counted from their traces); and every fault over 20 seeds from seed 500.
#   scripts/dev/scheduler_fault_scenarios.sh OUT.txt [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
bin=${2:-build/default/tools/ppspec}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "# scheduler fault scenarios: $(git rev-parse --short HEAD), $bin"
  for f in cap_before_stop preempt_keeps_spec_tokens late_output_after_preempt no_draft_lookahead_slots abort_scan_current_batch \
      lookahead_past_ring feedback_for_nonfinal_chunks full_prefix_hit; do
    echo
    echo "## scenarios/regressions/$f.toml and its twin, seed 1"
    "$bin" run "scenarios/regressions/$f.toml" --seeds 1 2>&1 | grep -v "model oracle" || true
    "$bin" run "scenarios/regressions/${f}_off.toml" --seeds 1 2>&1 | head -1 || true
  done
  for f in pp1_preempt pp2_preempt pp3_preempt_temperature pp4_abort_in_flight pp1_async_overlap pp2_lookahead_batch \
      pp3_lookahead_batch pp4_lookahead_preempt pp2_lookahead_resume; do
    echo
    echo "## scenarios/serving/$f.toml, seed 1"
    "$bin" run "scenarios/serving/$f.toml" --seeds 1 --trace "$work/t.jsonl" 2>&1 | head -1 || true
    released=$(grep -c '"ev":"request_released"' "$work/t.jsonl" || true)
    preempted=$(grep '"ev":"request_released"' "$work/t.jsonl" | grep -c '"text":"preempted"' || true)
    fenced=$(grep '"ev":"request_released"' "$work/t.jsonl" | grep -c '"ints":\[' || true)
    aborted=$(grep -c '"ev":"abort_arrived"' "$work/t.jsonl" || true)
    echo "trace: $released requests released, $preempted of them preempted, $fenced with blocks fenced for a step in flight; $aborted aborts arrived"
  done
  echo
  echo "## every fault from seed 500, 20 seeds each (each seed must catch it)"
  for f in cap_before_stop preempt_keeps_spec_tokens late_output_after_preempt no_draft_lookahead_slots abort_scan_current_batch \
      lookahead_past_ring feedback_for_nonfinal_chunks full_prefix_hit; do
    { "$bin" run "scenarios/regressions/$f.toml" --seed 500 --seeds 20 2>&1 || true; } | head -1
  done
} > "$out"
