#!/usr/bin/env bash
# Memory of a long fuzz campaign: runs `ppspec fuzz --time DURATION --keep-going` over the default
# space and samples the resident set (VmRSS of the process and of any worker it forks) every
# INTERVAL seconds, to show whether it grows. Writes OUT (a table of samples and a summary).
#
#   scripts/dev/fuzz_rss.sh [--ppspec BIN] [--time 1h] [--interval 10] [--seed 1] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
ppspec=./build/default/tools/ppspec
duration=1h
interval=10
seed=1
out=docs/evidence/fuzz-memory/fuzz-rss-1h.txt
while (($#)); do
  case "$1" in
    --ppspec) ppspec=$2; shift ;;
    --time) duration=$2; shift ;;
    --interval) interval=$2; shift ;;
    --seed) seed=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "scripts/dev/fuzz_rss.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"
"$ppspec" fuzz --time "$duration" --seed "$seed" --keep-going --out "$work/out" > "$work/report.txt" 2>&1 &
pid=$!
start=$(date +%s)
# VmRSS in KiB of the campaign and of its children (a --jobs worker), summed.
rss_of_tree() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
echo "seconds rss_kib" > "$work/samples.txt"
while kill -0 "$pid" 2>/dev/null; do
  echo "$(($(date +%s) - start)) $(rss_of_tree "$pid")" >> "$work/samples.txt"
  sleep "$interval"
done
status=0
wait "$pid" || status=$?
{
  echo "# scripts/dev/fuzz_rss.sh: ppspec fuzz --time $duration --seed $seed --keep-going (default space), VmRSS every ${interval} s"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ); ppspec $("$ppspec" --version 2>/dev/null | head -1); $(nproc) cores"
  echo "exit status: $status (0 nothing found, 1 failures found and kept)"
  grep -E '^[0-9]+ failures? in|cases \(' "$work/report.txt" | head -3
  python3 - "$work/samples.txt" <<'EOF'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]).read().split("\n")[1:] if l.strip()]
rows = [r for r in rows if r[1] > 0]
if not rows:
    sys.exit("no sample")
peak = max(r[1] for r in rows)
n = len(rows)
tenth = max(1, n // 10)
first = sorted(r[1] for r in rows[tenth:2 * tenth])[tenth // 2]
last = sorted(r[1] for r in rows[-tenth:])[tenth // 2]
print(f"samples: {n} over {rows[-1][0]} s; peak RSS {peak / 1024:.1f} MiB")
print(f"median RSS of the second tenth of the run {first / 1024:.1f} MiB, of the last tenth {last / 1024:.1f} MiB: "
      f"growth {(last - first) / 1024:+.1f} MiB")
print("samples (seconds, RSS MiB), every 30th:")
for s, k in rows[::30]:
    print(f"  {s:6d} {k / 1024:7.1f}")
EOF
} > "$out"
cat "$out"
