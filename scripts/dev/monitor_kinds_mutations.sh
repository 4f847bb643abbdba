#!/usr/bin/env bash
# Proof that each monitor's declared event kinds (Monitor::kinds, which ServingMonitors delivers by)
# are checked by the tests: drops one kind from a monitor's list at a time, rebuilds the tests and
# counts the failing ones (each line must say more than 0). Restores every file; writes OUT
# (default docs/evidence/monitor-kinds/mutations.txt).
#   scripts/dev/monitor_kinds_mutations.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/monitor-kinds/mutations.txt}
tests=./build/default/tests/ppspec_tests
saved=$(mktemp)
trap 'rm -f "$saved"' EXIT
mutate() {
  local file=verify/monitors/$1.h
  cp "$file" "$saved"
  # The kind and its comma; a list left with a trailing comma is still valid C++.
  sed -i "s/core::EventKind::$2\b,\? \?//" "$file"
  if cmp -s "$file" "$saved"; then
    echo "$1: the kind [$2] is not in its list (script out of date)"
    exit 1
  fi
  cmake --build build/default -j2 --target ppspec_tests > /dev/null
  local failing
  failing=$("$tests" --gtest_brief=1 2>&1 | grep -cE '^\[  FAILED  \] [A-Za-z]+\.[A-Za-z_]+ \(' || true)
  cp "$saved" "$file"
  echo "$1 without $2: $failing failing tests"
}
{
  echo "# scripts/dev/monitor_kinds_mutations.sh at $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (tree modified)')"
  mutate stage_agreement inputs_built
  mutate stage_agreement gate
  mutate draft_freshness drafts_adopted
  mutate draft_freshness inputs_built
  mutate model_reference stage_output
  mutate drafter_reference drafts_proposed
  mutate warmup_discipline module_load
  mutate pipeline_bubble op_posted
  mutate gate_agreement gate
  mutate padding_checker padding_rows
  mutate scheduling_cadence request_scheduled
  mutate decision_agreement draft_budget
  mutate embedding_checker table_bound
} | tee "$out"
cmake --build build/default -j2 --target ppspec_tests > /dev/null
