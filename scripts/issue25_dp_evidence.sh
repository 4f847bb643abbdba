#!/usr/bin/env bash
# Issue 25's data parallelism, as the README quotes it: each DP fault's regression scenario and its
# twin (seed 1: verdict and first report), each over 20 seeds from seed 500 under the random and the
# PCT policy, and the DP serving scenarios over 20 seeds, with what seed 1's trace shows the replicas
# posted on their DP groups (token counts, expert-parallel all-to-alls) per rank.
#   scripts/issue25_dp_evidence.sh OUT.txt [BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
bin=${2:-build/default/tools/ppspec}
faults="dummy_run_one_forward dummy_run_skips_drafter"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "# issue 25 data parallelism: $(git rev-parse --short HEAD), $bin"
  for f in $faults; do
    echo
    echo "## scenarios/regressions/$f.toml and its twin, seed 1"
    "$bin" run "scenarios/regressions/$f.toml" --seeds 1 2>&1 | grep -v "model oracle" | grep -v -E '^\s+(f[0-9]|node|rankdir|digraph|\}|wait-for graph)' || true
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
  for f in dp2_pp2_idle_replica dp2_pp1_tp2; do
    echo
    echo "## scenarios/serving/$f.toml: 20 seeds, then seed 1's report and trace"
    { "$bin" run "scenarios/serving/$f.toml" --seeds 20 2>&1 || true; } | head -1
    { "$bin" run "scenarios/serving/$f.toml" --seeds 1 --trace "$work/t.jsonl" 2>&1 || true; } | head -2
    echo "trace: collectives posted on the DP groups, per label and rank (every member of a group must post as many):"
    grep '"ev":"op_posted"' "$work/t.jsonl" | grep '"comm":"dp_group' |
      sed -E 's/.*"rank":([0-9]+).*"comm":"([^"]*)".*"label":"([^"@]*)".*/  \2 \3 rank\1/' | sort | uniq -c
  done
} > "$out"
