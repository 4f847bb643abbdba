#!/usr/bin/env bash
# A newcomer's wait: clones the committed tree into a fresh folder and runs the README's two
# commands there, one after the other, each under /usr/bin/time -v; writes the wall time, CPU time
# and peak memory of each to OUT (default docs/evidence/ci-time/newcomer.txt).
#
#   scripts/dev/newcomer_time.sh [--remove-packages] [--commit REV] [--first-only] [OUT]
# --commit REV measures that commit instead of HEAD (a before-and-after on one machine).
# --first-only times the first command alone (the second, standalone, is what scripts/dev/ci_time.sh times).
# --remove-packages first removes (apt-get remove + autoremove) the Debian packages that
# scripts/install_deps.sh installs and a stock Debian 12 image with g++ and cmake lacks, so that the
# first command installs them again, as on a fresh machine. Run as root.
set -euo pipefail
cd "$(dirname "$0")/../.."
remove=0
rev=HEAD
first_only=0
while (($#)); do
  case "$1" in
    --remove-packages) remove=1 ;;
    --first-only) first_only=1 ;;
    --commit) rev=$2; shift ;;
    *) break ;;
  esac
  shift
done
rev=$(git rev-parse --short "$rev")
out=${1:-docs/evidence/ci-time/newcomer.txt}
mkdir -p "$(dirname "$out")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ((remove)); then
  # Those a stock image lacks (the machine's own g++, cmake, python3, clang stay).
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -q libboost-fiber-dev libboost-context-dev librapidcheck-dev libfmt-dev \
    libtomlplusplus-dev nlohmann-json3-dev libcli11-dev > "$work/remove.log" 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -q >> "$work/remove.log" 2>&1
fi
git clone -q . "$work/clone"
git -C "$work/clone" checkout -q "$rev"
# One README command under /usr/bin/time -v; its figures, and its log's last lines if it failed.
timed() {
  local name=$1
  shift
  local status=0
  (cd "$work/clone" && /usr/bin/time -v -o "$work/$name.time" "$@") > "$work/$name.log" 2>&1 || status=$?
  echo "## $name: $* (exit $status)"
  grep -E "Elapsed \(wall clock\)|User time|System time|Percent of CPU|Maximum resident" "$work/$name.time" | sed 's/^\t/  /'
  if ((status != 0)); then
    echo "  the last lines of its output:"
    tail -n 30 "$work/$name.log" | sed 's/^/    /'
  fi
  return "$status"
}
{
  echo "# scripts/dev/newcomer_time.sh: the README's $( ((first_only)) && echo "first command" || echo "two commands") from a fresh clone of $rev"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  if ((remove)); then
    echo "packages: removed first, so the first command installs them"
  else
    echo "packages: already installed"
  fi
  echo "CUDA toolkit on this machine: $([[ -x /usr/local/cuda/bin/nvcc ]] && echo "yes (the default preset also compiles the real backend's kernels)" || echo no)"
  timed setup ./scripts/setup.sh
  ((first_only)) || timed test ./scripts/test.sh
} | tee "$out"
