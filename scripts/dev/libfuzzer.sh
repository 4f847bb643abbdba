#!/usr/bin/env bash
# Fuzzes ppspec's readers with libFuzzer (libfuzzer/README.md says what each target covers).
#
#   scripts/dev/libfuzzer.sh [SECONDS_PER_TARGET] [TARGET...]   build the fuzz preset, replay the checked-in
#                                                    inputs, then fuzz each target (default 600 s)
#   scripts/dev/libfuzzer.sh --merge [SECONDS] [TARGET...]      the same, then add the inputs that bring new coverage
#                                                    to libfuzzer/corpus/<target> (the only mode that writes there)
#   scripts/dev/libfuzzer.sh --ci                               replay, then 15 s per target: a quick check of a change
#                                                    (CI replays the corpus in the asan preset's ctest instead)
#   scripts/dev/libfuzzer.sh --replay                           replay libfuzzer/corpus and libfuzzer/findings only
#   --skip-findings                                  leave libfuzzer/findings out of the replay (see below)
#   --keep-going                                     fuzz on past crashes (libFuzzer's -fork=1
#                                                    -ignore_crashes=1) and list every reproducer
#   --no-build                                       use build/fuzz as it is
#
# Every input must give a verdict or a clear input error: a crash, a sanitizer report, an internal
# error, an escaping exception, a timeout (-timeout) or a memory blow-up (-rss_limit_mb) fails the
# script, which names the reproducer. New inputs go to a scratch corpus, WORK/<target>/corpus (kept
# between runs), reproducers to WORK/<target>/; WORK is $FUZZ_WORK, by default build/fuzz/work.
#
# libfuzzer/findings/<target>/ holds reproducers of open bugs. Until they are fixed they crash, so their
# replay is a step of its own that --skip-findings leaves out; once fixed they are regression inputs
# and the replay keeps them fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."

all_targets=(fuzz_scenario fuzz_scenario_run fuzz_trace fuzz_flight_recorder)
seconds=600
merge=0
replay_only=0
skip_findings=0
keep_going=0
build=1
targets=()
while (($#)); do
  case "$1" in
    --ci) seconds=15 ;;  # a quick check; long fuzzing is the default mode
    --merge) merge=1 ;;
    --replay) replay_only=1 ;;
    --skip-findings) skip_findings=1 ;;
    --keep-going) keep_going=1 ;;
    --no-build) build=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    fuzz_*) targets+=("$1") ;;
    *)
      if [[ "$1" =~ ^[0-9]+$ ]]; then
        seconds=$1
      else
        echo "scripts/dev/libfuzzer.sh: unknown argument '$1' (see scripts/dev/libfuzzer.sh --help)" >&2
        exit 2
      fi
      ;;
  esac
  shift
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "scripts/dev/libfuzzer.sh: no fuzz target '$t' (${all_targets[*]})" >&2; exit 2; }
done

if ((build)); then
  cmake --preset fuzz >/dev/null
  # Only the targets asked for, and the libraries they link.
  cmake --build --preset fuzz --target "${targets[@]}"
fi

bin=build/fuzz/libfuzzer
work=${FUZZ_WORK:-build/fuzz/work}
# Fiber stacks are switched behind ASan's back: no fake stacks (see CMakeLists.txt's ASan block).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

dict_of() {
  case $1 in
    fuzz_trace) echo libfuzzer/jsonl.dict ;;
    fuzz_flight_recorder) echo libfuzzer/fr.dict ;;
    *) echo libfuzzer/toml.dict ;;
  esac
}
# Seeds are below 64 KB (libfuzzer/README.md); scenarios are far smaller than traces and dumps.
max_len_of() { [[ $1 == fuzz_scenario* ]] && echo 16384 || echo 65536; }
common=(-timeout=10 -rss_limit_mb=2048)

failed=()

# Runs every file of libfuzzer/corpus/<target> once, in one process (no fuzzing, nothing written).
replay_corpus() {
  local t=$1
  local files=()
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "libfuzzer/corpus/$t" -type f -print0 | sort -z)
  ((${#files[@]})) || return 0
  local log="$work/$t/replay.log"
  mkdir -p "$work/$t"
  echo "== $t: replaying ${#files[@]} inputs of libfuzzer/corpus/$t"
  if ! "$bin/$t" "${common[@]}" "${files[@]}" >"$log" 2>&1; then
    local last
    last=$(grep '^Running: ' "$log" | tail -1 | sed 's/^Running: //')
    echo "FAIL $t: $last (log: $log)" >&2
    grep -m1 -E '^==[0-9]+==ERROR|runtime error|^terminate called|Assertion|ERROR: libFuzzer' "$log" >&2 || true
    failed+=("$t replay: $last")
  fi
}

# Runs every reproducer of libfuzzer/findings/<target> in a process of its own, so that each open bug
# is listed.
replay_findings() {
  local t=$1
  [[ -d libfuzzer/findings/$t ]] || return 0
  local files=()
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "libfuzzer/findings/$t" -type f ! -name '*.md' -print0 | sort -z)
  ((${#files[@]})) || return 0
  mkdir -p "$work/$t"
  echo "== $t: replaying ${#files[@]} reproducers of libfuzzer/findings/$t"
  local f log
  for f in "${files[@]}"; do
    log="$work/$t/finding-$(basename "$f").log"
    if ! "$bin/$t" "${common[@]}" "$f" >"$log" 2>&1; then
      echo "FAIL $t: $f (log: $log)" >&2
      failed+=("$t finding: $f")
    fi
  done
}

fuzz() {
  local t=$1
  local corpus="$work/$t/corpus"
  mkdir -p "$corpus"
  cp -n libfuzzer/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  local log="$work/$t/fuzz.log"
  local mode=()
  ((keep_going)) && mode=(-fork=1 -ignore_crashes=1)
  echo "== $t: fuzzing for ${seconds} s (corpus $corpus, log $log)"
  touch "$work/$t/.start"
  local rc=0
  "$bin/$t" "${common[@]}" "${mode[@]}" -max_len="$(max_len_of "$t")" -dict="$(dict_of "$t")" \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/$t/" "$corpus" >"$log" 2>&1 || rc=$?
  grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 | cut -c1-160 || true
  local units=()
  while IFS= read -r -d '' f; do units+=("$f"); done < <(find "$work/$t" -maxdepth 1 -type f -newer "$work/$t/.start" \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) -print0 | sort -z)
  if ((rc != 0 || ${#units[@]})); then
    echo "FAIL $t: exit $rc; ${#units[@]} reproducer(s) (log: $log)" >&2
    grep -m1 -E '^==[0-9]+==ERROR|runtime error|^terminate called|ERROR: libFuzzer' "$log" >&2 || true
    grep -m1 -A1 '^terminate called' "$log" | tail -1 >&2 || true
    local u
    for u in "${units[@]}"; do
      echo "  reproducer: $u" >&2
      echo "$t: $u" >> "$work/$t/failed.txt"
    done
    ((${#units[@]})) || echo "$t: see $log" >> "$work/$t/failed.txt"
    echo "  replay one:   $bin/$t REPRODUCER" >&2
    echo "  minimise one: $bin/$t -minimize_crash=1 -max_total_time=60 -artifact_prefix=$work/$t/min- REPRODUCER" >&2
  fi
  if ((merge)); then
    echo "== $t: merging new coverage into libfuzzer/corpus/$t"
    "$bin/$t" "${common[@]}" -max_len="$(max_len_of "$t")" -merge=1 libfuzzer/corpus/"$t" "$corpus" >"$work/$t/merge.log" 2>&1 ||
      { echo "FAIL $t: merge (log $work/$t/merge.log)" >&2; echo "$t merge" >> "$work/$t/failed.txt"; }
  fi
}

for t in "${targets[@]}"; do replay_corpus "$t"; done
if ((!skip_findings)); then
  for t in "${targets[@]}"; do replay_findings "$t"; done
fi
if ((!replay_only && seconds > 0)); then
  # One libFuzzer process per core at a time (each is single-threaded): CI's 2 cores fuzz two readers
  # at once. Each target's lines are printed together once it ends; its failures go to a file,
  # since a background job cannot add to this shell's list.
  parallel=$(nproc)
  running=0
  for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    rm -f "$work/$t/failed.txt"
    fuzz "$t" > "$work/$t/summary.txt" 2>&1 &
    if ((++running >= parallel)); then
      wait -n || true
      ((running--))
    fi
  done
  wait || true
  for t in "${targets[@]}"; do
    cat "$work/$t/summary.txt"
    if [[ -f $work/$t/failed.txt ]]; then
      while IFS= read -r line; do failed+=("$line"); done < "$work/$t/failed.txt"
    fi
  done
fi

if ((${#failed[@]})); then
  echo "scripts/dev/libfuzzer.sh: ${#failed[@]} failure(s):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "scripts/dev/libfuzzer.sh: no crash"
