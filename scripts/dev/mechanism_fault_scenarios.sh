#!/usr/bin/env bash
# The engine mechanisms' scenarios, as docs/verification.md quotes them: each fault's regression scenario and its twin
# (seed 1: verdict and first report), each fault over 20 seeds from seed 500 under the random and
# the PCT policy, and the mechanisms' serving scenarios over 20 seeds, with what their traces show the
# mechanisms did (draft budgets below K, accepted counts read back through pinned memory, EAGLE taps
# sent with the activations or straight to the last stage, the collectives each rank posted on the
# data-parallel groups).
#   scripts/dev/mechanism_fault_scenarios.sh OUT.txt [BINARY]
# FAULTS="a b" and SERVING="name ..." pick the faults and serving scenarios (data parallelism:
# FAULTS="dummy_run_one_forward dummy_run_skips_drafter" SERVING="dp2_pp2_idle_replica dp2_pp1_tp2").
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
bin=${2:-build/default/tools/ppspec}
faults=${FAULTS:-local_adaptive_budget rank_local_sampling rollback_last_stage_only pinned_read_without_sync untagged_aux_relay tap_local_layer_index}
serving=${SERVING:-pp1_adaptive_budget pp2_tp2_adaptive_budget pp1_hybrid_recurrent pp2_hybrid_recurrent pp4_hybrid_recurrent_preempt pp1_eagle pp2_tp2_eagle pp4_eagle}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "# engine mechanism scenarios: $(git rev-parse --short HEAD), $bin"
  for f in $faults; do
    echo
    echo "## scenarios/regressions/$f.toml and its twin, seed 1"
    # The report without the deadlock's Graphviz text.
    "$bin" run "scenarios/regressions/$f.toml" --seeds 1 2>&1 | grep -v "model oracle" |
      grep -v -E '^\s+(f[0-9]|node |rankdir|digraph|\}|wait-for graph)' || true
    "$bin" run "scenarios/regressions/${f}_off.toml" --seeds 1 2>&1 | head -1 || true
  done
  echo
  echo "## every fault and twin from seed 500, 20 seeds each, random and pct:3 (each seed must meet its expectation)"
  for f in $faults; do
    for s in random pct:3; do
      { "$bin" run "scenarios/regressions/$f.toml" "scenarios/regressions/${f}_off.toml" --seed 500 --seeds 20 --strategy $s 2>&1 || true; } |
        grep -E "^(ok|FAIL)"
    done
  done
  for f in $serving; do
    echo
    echo "## scenarios/serving/$f.toml: 20 seeds, then seed 1's trace"
    { "$bin" run "scenarios/serving/$f.toml" --seeds 20 2>&1 || true; } | head -1
    "$bin" run "scenarios/serving/$f.toml" --seeds 1 --trace "$work/t.jsonl" > /dev/null 2>&1 || true
    budgets=$(grep '"ev":"draft_budget"' "$work/t.jsonl" | grep -o '"value":[0-9]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';' || true)
    readbacks=$(grep -c '"ev":"accepted_readback"' "$work/t.jsonl" || true)
    riding=$(grep '"ev":"op_posted"' "$work/t.jsonl" | grep -c 'act.aux' || true)
    direct=$(grep '"ev":"op_posted"' "$work/t.jsonl" | grep -c 'aux.direct' || true)
    echo "trace: draft budgets (probes per value): ${budgets:-none}; accepted counts read back through pinned memory: $readbacks;" \
      "EAGLE tap transfers posted: $riding with the activations, $direct straight to the last stage"
    grep -q '"comm":"dp_group' "$work/t.jsonl" || continue
    echo "trace: collectives posted on the DP groups, per label and rank (every member of a group must post as many):"
    grep '"ev":"op_posted"' "$work/t.jsonl" | grep '"comm":"dp_group' |
      sed -E 's/.*"rank":([0-9]+).*"comm":"([^"]*)".*"label":"([^"@]*)".*/  \2 \3 rank\1/' | sort | uniq -c
  done
} > "$out"
