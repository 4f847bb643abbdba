#!/usr/bin/env bash
# Whether two builds fuzz alike: `ppspec fuzz` with the same space, seed and case budget by each,
# everything it writes compared byte for byte once the output folder's name and the timings are
# taken out. Cases no one chose by hand: a check beside the committed scenarios.
#   scripts/dev/fuzz_compare.sh BINARY_BEFORE BINARY_AFTER SPACE SEED CASES [FAULTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$1 after=$2 space=$3 seed=$4 cases=$5 faults=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in before after; do
  bin=$([ "$side" = before ] && echo "$before" || echo "$after")
  extra=()
  [ -n "$faults" ] && extra=(--faults "$faults")
  "$bin" fuzz "$space" --seed "$seed" --cases "$cases" --out "$work/$side" "${extra[@]}" > "$work/$side.stdout" 2>&1 || true
  # The folder's own name and the seconds spent differ by construction.
  # Progress lines come every few seconds of wall time, so they are left out too.
  find "$work/$side" -type f | while read -r f; do
    sed -i -E -e "s|$work/$side|OUT|g" -e 's/"(seconds|found_after_s|shrunk_after_s)": *[0-9.e+-]*/"\1": T/' "$f"
  done
  sed -i -E -e "s|$work/$side|OUT|g" -e '/^[0-9]+ cases, [0-9]+\/s, /d' -e 's/[0-9.]+ s\b/T s/g' -e 's/[0-9.]+ cases\/s/R cases\/s/g' "$work/$side.stdout"
done
echo "ppspec fuzz $space --seed $seed --cases $cases ${faults:+--faults $faults}: $(ls "$work/before" | wc -l) files written"
if diff -r "$work/before" "$work/after" && diff "$work/before.stdout" "$work/after.stdout"; then
  echo "identical (output folder and timings aside)"
else
  echo "DIFFERENT"
  exit 1
fi
