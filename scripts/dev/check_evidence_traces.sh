#!/usr/bin/env bash
# Runs `ppspec check` on every trace recorded on GPUs that docs/evidence keeps in its archives, and
# counts the exit statuses: 0 pass, 1 a finding, 2 bad input (listed, with the reason, apart from a
# trace whose scenario has changed since it was recorded, which check refuses by design).
#   scripts/dev/check_evidence_traces.sh [PPSPEC_BINARY]     (default build/default/tools/ppspec)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/default/tools/ppspec}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
i=0
while IFS= read -r -d '' archive; do
  i=$((i + 1))
  mkdir -p "$work/$i"
  tar -xzf "$archive" -C "$work/$i"
  echo "archive $i: $archive"
done < <(find docs/evidence -name '*.tgz' -print0 | sort -z)
declare -A count
listed=()
while IFS= read -r -d '' trace; do
  rc=0
  "$bin" check "$trace" > /dev/null 2> "$work/err" || rc=$?
  if [[ $rc -eq 2 ]] && grep -q 'has changed since' "$work/err"; then rc="2 (scenario changed since)"; fi
  count[$rc]=$(( ${count[$rc]:-0} + 1 ))
  [[ $rc =~ ^[0-9]+$ && $rc -ge 2 ]] && listed+=("exit $rc ${trace#"$work"/}: $(head -c 160 "$work/err" | tr '\n' ' ')")
done < <(find "$work" -name '*.jsonl' -print0 | sort -z)
echo "binary: $bin"
for k in "${!count[@]}"; do echo "exit $k: ${count[$k]} traces"; done | sort
for l in "${listed[@]}"; do echo "$l" | sed "s#$work/##g"; done
