#!/usr/bin/env bash
# The causes a mutant's reports give, before and after a change: runs scripts/dev/mutants/causes.py on
# this tree and on a worktree of BEFORE (given this tree's causes.py, campaign.py and patches, and
# any extra commits named with --with, so that only the report code differs), and writes both
# tables to OUT.
#
#   scripts/dev/mutants/causes_before_after.sh BEFORE OUT [--with COMMIT]... [--] [causes.py options] PATCH...
#
# Builds go to build/mutant (this tree) and build/mutant-before (BEFORE; $BEFORE_BUILD_DIR if set): the first run of each is a
# full build of ppspec, later ones are incremental.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
before="$1"
out="$2"
shift 2
with=()
while [[ $# -gt 0 && "$1" == --with ]]; do
  with+=("$2")
  shift 2
done
[[ "${1:-}" == -- ]] && shift
worktree="$(mktemp -d /tmp/ppspec-before.XXXXXX)"
cleanup() { git -C "$root" worktree remove --force "$worktree" >/dev/null 2>&1 || true; }
trap cleanup EXIT
git -C "$root" worktree add --detach --force "$worktree" "$before" >/dev/null
for c in "${with[@]}"; do git -C "$root" show "$c" -- . ':!scripts/dev/mutants' | git -C "$worktree" apply; done
cp "$root"/scripts/dev/mutants/{causes.py,campaign.py} "$root"/scripts/dev/mutants/*.patch "$worktree/scripts/dev/mutants/"
patches=()
opts=()
for a in "$@"; do
  if [[ "$a" == *.patch ]]; then patches+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")"); else opts+=("$a"); fi
done
rel=()
for p in "${patches[@]}"; do rel+=("scripts/dev/mutants/$(basename "$p")"); done
{
  echo "# The causes mutants' reports give: $(git -C "$root" rev-parse --short HEAD) against $(git -C "$root" rev-parse --short "$before")${with:+ (with ${with[*]})}"
  echo "# written by scripts/dev/mutants/causes_before_after.sh $before OUT ${with[*]:+--with ${with[*]}} ${opts[*]} ${rel[*]} ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "## after: this tree"
  (cd "$root" && python3 scripts/dev/mutants/causes.py --build-dir "$root/build/mutant" "${opts[@]}" "${rel[@]}")
  echo
  echo "## before: $before"
  (cd "$worktree" && python3 scripts/dev/mutants/causes.py --build-dir "${BEFORE_BUILD_DIR:-$root/build/mutant-before}" "${opts[@]}" "${rel[@]}")
} > "$out"
echo "wrote $out"
