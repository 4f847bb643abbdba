#!/usr/bin/env bash
# Which allocator a clean fuzz campaign (BM_FuzzCases) runs best on, in instructions (callgrind; they
# do not drift): the same benchmark binary, built with the system allocator (glibc's), run as it is
# and with mimalloc, tcmalloc and jemalloc preloaded in turn (Debian's libmimalloc2.0,
# libtcmalloc-minimal4 and libjemalloc2, installed by hand: none is a build dependency but
# mimalloc's -dev package), and glibc's malloc/free/realloc and libm's llround as shares of the
# glibc run (self cost).
#   scripts/dev/allocator_compare.sh BENCH [OUT]   (BENCH: a ppspec_bench that links no allocator, e.g.
#   built with -DPPSPEC_ALLOCATOR=system)
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${1:?usage: scripts/dev/allocator_compare.sh BENCH [OUT]}
out=${2:-docs/evidence/allocator-choice/allocator-compare.txt}
lib=/usr/lib/x86_64-linux-gnu
if ldd "$bench" | grep libmimalloc > /dev/null; then
  echo "scripts/dev/allocator_compare.sh: $bench links mimalloc already: give a system-allocator build" >&2; exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # name preload -> instructions; the profile in $work/name.out
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/$1.%p.out" \
    env ${2:+LD_PRELOAD=$2} "$bench" --benchmark_filter='^BM_FuzzCases$' --benchmark_min_time=0 > /dev/null 2> "$work/$1.log"
  grep -E '^==[0-9]+== Collected : ' "$work/$1.log" | awk '{print $4}' | sort -n | tail -1
}
{
  echo "# scripts/dev/allocator_compare.sh $bench ($(date -u +%F)): BM_FuzzCases, one iteration, instructions (callgrind)"
  for a in glibc: mimalloc:$lib/libmimalloc.so.2 tcmalloc:$lib/libtcmalloc_minimal.so.4 jemalloc:$lib/libjemalloc.so.2; do
    name=${a%%:*} preload=${a#*:}
    [[ -z $preload || -e $preload ]] || { echo "$name: $preload is not installed"; continue; }
    printf '%-9s %15s\n' "$name" "$(run "$name" "$preload")"
  done
  glibc=$(ls -S "$work"/glibc.*.out | head -1)
  callgrind_annotate --auto=no --threshold=100 "$glibc" | python3 -c '
import re, sys
total, shares = 0, {"malloc, free and realloc (glibc)": 0, "llround (libm)": 0}
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
    if m: total = int(m.group(1).replace(",", ""))
    m = re.match(r"\s*([\d,]+)\s+\(.*?\)\s+(\S+?):(\S+)", line)
    if not m: continue
    n, where, fn = int(m.group(1).replace(",", "")), m.group(2), m.group(3)
    if "malloc/" in where: shares["malloc, free and realloc (glibc)"] += n
    if fn.startswith("lround") or fn.startswith("llround"): shares["llround (libm)"] += n
for k, v in shares.items(): print(f"glibc run: {k}: {v:,} ({100 * v / total:.1f} %)")'
} > "$out"
cat "$out"
