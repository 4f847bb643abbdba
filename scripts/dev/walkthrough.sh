#!/usr/bin/env bash
# A new user's first hour, as the README's first page tells it (ctest `walkthrough`, so CI runs it):
# its commands run as written, a scenario written from the README's own text, a Flight Recorder
# folder checked, imported and re-run with the same verdict, a vLLM configuration (flags and a YAML
# file) turned into serving scenarios that pass, a trace checked, shown and replayed from another
# folder with its scenario gone, a hand-written trace from traces/README.md, and fuzz finding a
# fault. Each step says what it does; the first that does not do what the docs say stops the script
# with exit 1.
#
# Usage: scripts/dev/walkthrough.sh PPSPEC_BINARY
set -uo pipefail
ppspec=$(realpath "${1:?usage: walkthrough.sh PPSPEC_BINARY}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$repo/scenarios" "$repo/traces" .

step=0
# expect CODE TEXT -- COMMAND...: the command exits CODE and prints TEXT (on stdout or stderr).
expect() {
  local code=$1 text=$2
  shift 3
  step=$((step + 1))
  local out got
  out=$("$@" 2>&1)
  got=$?
  if [[ $got -ne $code || "$out" != *"$text"* ]]; then
    printf 'walkthrough step %d FAILED: %s\n  exit %d (expected %d); expected to see: %s\n%s\n' "$step" "$*" "$got" "$code" "$text" "$out" | head -n 40
    exit 1
  fi
  printf 'walkthrough step %d ok: %s\n' "$step" "$*"
}

# A fenced block of a markdown file: the first after the line that starts with HEADING, of LANG.
block() {
  awk -v h="$2" -v lang="$3" 'index($0, h) == 1 { found = 1 } found && $0 == "```" lang { inside = 1; next }
    inside && $0 == "```" { exit } inside { print }' "$1"
}

# 1. Run a scenario.
expect 0 "verdict fifo-misalignment (expected fifo-misalignment)" -- "$ppspec" run scenarios/programs/double_post_broadcast.toml
expect 0 "rules cited: R3, R5: docs/rules.md" -- "$ppspec" run scenarios/programs/double_post_broadcast.toml

# 2. Write a scenario: the README's own, then its fix as the README describes it.
block "$repo/README.md" "## 2. Write a scenario" toml > exchange.toml
expect 0 "verdict deadlock (expected deadlock)" -- "$ppspec" run exchange.toml
sed -e 's/^ops = \[$/ops = [\n  { op = "group_start" },/' \
    -e 's/^\(  { op = "recv".*\)$/\1\n  { op = "group_end" },/' \
    -e 's/verdict = "deadlock"/verdict = "pass"/' exchange.toml > grouped.toml
expect 0 "50 of 50 seeds as expected" -- "$ppspec" run grouped.toml --seeds 50

# 3. A real job's Flight Recorder dumps: checked, imported, re-run with the same verdict.
expect 1 "rank 1 posts an extra broadcast" -- "$ppspec" check traces/corpus/flight-recorder/double_post/pickle
expect 0 "the same verdict (misaligned)" -- "$ppspec" import traces/corpus/flight-recorder/double_post/pickle -o job.toml
expect 0 "20 of 20 seeds as expected" -- "$ppspec" run job.toml --seeds 20
expect 2 "already exists (--force overwrites it)" -- "$ppspec" import traces/corpus/flight-recorder/double_post/pickle -o job.toml

# 4. A vLLM deployment: flags as in the README, and a YAML config.
expect 0 "ppspec run of the scenario (seed 1): pass" -- "$ppspec" from-vllm -o mine.toml -- vllm serve meta-llama/Llama-3.1-8B \
  -pp 2 -tp 2 --speculative-config '{"method": "eagle3", "num_speculative_tokens": 3}' --max-num-seqs 16 --async-scheduling
expect 0 "5 of 5 seeds as expected" -- "$ppspec" run mine.toml --seeds 5
printf 'model: Qwen/Qwen3-8B\ntensor_parallel_size: 2\ndata_parallel_size: 2\nspeculative_config: {"method": "ngram", "num_speculative_tokens": 2}\nmax_num_seqs: 4\n' > serve.yaml
expect 0 "no counterpart: speculative_config.method = \"ngram\"" -- "$ppspec" from-vllm serve.yaml -o qwen.toml
expect 2 "did you mean 'tensor_parallel_size'" -- "$ppspec" from-vllm -o typo.toml -- --tensor-paralel-size 2

# 5. A trace travels: recorded here, checked, shown and replayed from another folder, the scenario gone.
mkdir -p recorded elsewhere
cp scenarios/serving/pp1_k5.toml recorded/serving.toml
(cd recorded && "$ppspec" run serving.toml --trace run.jsonl > /dev/null) || { echo "walkthrough: recording failed"; exit 1; }
mv recorded/run.jsonl elsewhere/ && rm -r recorded
cd elsewhere
expect 0 "verdict pass (recorded pass)" -- "$ppspec" check run.jsonl
expect 0 "time (ms)" -- "$ppspec" show run.jsonl
expect 0 "replayed byte for byte" -- "$ppspec" replay run.jsonl
cd "$work"

# 6. A trace written by hand, as traces/README.md shows it.
block "$repo/traces/README.md" "## The smallest useful trace" jsonl > mine.jsonl
expect 1 "collective #0 on 'pp' pairs mismatched operations: count 24 vs 20" -- "$ppspec" check mine.jsonl

# 7. Fuzz, as the README shows it: the fault found, shrunk, and its file fails the same way.
expect 1 "FAIL stale-draft / draft-freshness" -- "$ppspec" fuzz --faults stale_drafts --cases 50 --out found
expect 0 "verdict stale-draft (expected stale-draft)" -- "$ppspec" run found/found-seed1-case0-draft-freshness.toml

# 8. Bad input is said, with what was expected.
expect 2 "" -- "$ppspec" run exchange.toml --seeds 0
echo "walkthrough: all $step steps did what the docs say"
