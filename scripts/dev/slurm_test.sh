#!/usr/bin/env bash
# The Slurm recipe of docs/fuzz.md ("Many cores, many machines"), run for real on a single-node
# Slurm: Debian's slurm-wlm, slurmctld and slurmd on this machine, configured here, stopped at the
# end. A `ppspec fuzz` campaign is submitted as a job array (`sbatch --wait`, one `--shard I/N` a
# task), the shards are merged with `ppspec fuzz --merge`, and the merge must equal the same campaign
# run in one process, case for case (scripts/dev/slurm_compare.py says what is compared).
#
#   scripts/dev/slurm_test.sh [PPSPEC_BINARY] [OUT_FILE]
#
# PPSPEC_BINARY defaults to build/default/tools/ppspec (it is copied first, so a rebuild during the
# run does not change it); OUT_FILE, the record of the run, to docs/evidence/slurm-single-node/single-node.txt.
# Run as root on Debian 12 (a container without systemd will do): slurm-wlm and munge are installed
# with apt-get when missing. Nothing system-wide is configured or started: munged (with a key of
# its own), slurmctld and slurmd run as daemons on loopback ports 16817/16818 with everything (their
# configuration, state, spool, logs, the campaign's folders) in one temporary folder, removed at the
# end (KEEP=1 keeps it). The campaign: SHARDS (4) shards of CASES (160) cases in all, SEED (7), the
# default (whole) space, FAULTS (stale_drafts, so that cases fail and are shrunk), --keep-going.
# Exit 0 when the merge equals the one-process campaign, 1 when it does not, 2 when Slurm could
# not be set up or a run went wrong (the daemons' logs are printed).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin_arg=${1:-$root/build/default/tools/ppspec}
out_file=$(realpath -m "${2:-$root/docs/evidence/slurm-single-node/single-node.txt}")
SHARDS=${SHARDS:-4}
CASES=${CASES:-160}
SEED=${SEED:-7}
FAULTS=${FAULTS:-stale_drafts}
PORT_CTLD=16817
PORT_D=16818

die() { echo "slurm_test: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (Slurm's daemons and apt-get need it)"
[ -x "$bin_arg" ] || die "no ppspec binary at $bin_arg (build it, or name one)"
((CASES % SHARDS == 0)) || die "CASES ($CASES) must be a multiple of SHARDS ($SHARDS)"
per_shard=$((CASES / SHARDS))
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- Slurm and munge, from Debian's packages -----------------------------------------------------
if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null || ! command -v sbatch > /dev/null ||
  ! command -v munged > /dev/null; then
  command -v apt-get > /dev/null || die "slurm-wlm is missing and there is no apt-get (Debian 12 expected)"
  echo "installing slurm-wlm and munge with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge > /dev/null
fi

work=$(mktemp -d /tmp/slurm-test.XXXXXX)
chmod 755 "$work"  # munged wants every folder above its socket searchable by all
mkdir -p "$work/bin" "$work/munge-key" "$work/munge-run" "$work/state" "$work/spool" "$work/log" "$work/out" "$work/tasks"
chmod 700 "$work/munge-key"
cp "$bin_arg" "$work/bin/ppspec"
bin=$work/bin/ppspec

stop_all() {
  local rc=$?
  set +e
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    if [ -s "$pidfile" ]; then
      pid=$(cat "$pidfile")
      kill "$pid" 2> /dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2> /dev/null && kill -9 "$pid" 2> /dev/null
    fi
  done
  [ -S "$work/munge-run/munge.sock" ] && munged --stop --socket="$work/munge-run/munge.sock" > /dev/null 2>&1
  if [ "$rc" != 0 ]; then
    for log in "$work"/log/*.log "$work/munge-key/munged.log"; do
      [ -f "$log" ] && { echo "--- last lines of $log" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
  exit "$rc"
}
trap stop_all EXIT

# --- munged: a key and a socket of its own -------------------------------------------------------
if command -v mungekey > /dev/null; then
  mungekey --create --keyfile="$work/munge-key/munge.key" > /dev/null
else
  dd if=/dev/urandom of="$work/munge-key/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$work/munge-key/munge.key"
munged --socket="$work/munge-run/munge.sock" --key-file="$work/munge-key/munge.key" \
  --pid-file="$work/munge-run/munged.pid" --log-file="$work/munge-key/munged.log" \
  --seed-file="$work/munge-key/munged.seed" || die "munged did not start"
munge -n -S "$work/munge-run/munge.sock" | unmunge -S "$work/munge-run/munge.sock" > /dev/null ||
  die "munge cannot encode and decode a credential on its own socket"

# --- slurm.conf: one node (this machine), one partition, no cgroups, no accounting ---------------
host=$(hostname -s)
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" << EOF
ClusterName=ppspec-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT_CTLD
SlurmdPort=$PORT_D
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge-run/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start"
slurmd -f "$SLURM_CONF" || die "slurmd did not start"
state=
for _ in $(seq 60); do
  state=$(sinfo -h -n "$host" -o %T 2> /dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || die "node $host not idle after 60 s (sinfo says: '${state:-no answer}')"

# --- the record ----------------------------------------------------------------------------------
mkdir -p "$(dirname "$out_file")"
: > "$out_file"
say() { printf '%s\n' "$*" | tee -a "$out_file"; }
say "# scripts/dev/slurm_test.sh: the Slurm recipe of docs/fuzz.md on a single-node Slurm"
say "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "host: $host, $(nproc) cores, $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release)"
say "slurm: $(sinfo -V) (slurmctld + slurmd on this machine; ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, SelectType=select/cons_tres, no accounting)"
say "munge: $(munged -V 2>&1 | head -n 1)"
say "ppspec: $("$bin" --version 2>&1 | head -n 1) ($bin_arg)"
say "campaign: the default space, seed $SEED, faults $FAULTS, --keep-going, $CASES cases = $SHARDS shards of $per_shard"
say "sinfo: $(sinfo -h -o '%P %a %D %T %N %c CPUs')"

# --- the job array -------------------------------------------------------------------------------
faults_flag=()
[ -n "$FAULTS" ] && faults_flag=(--faults "$FAULTS")
cat > "$work/job.sh" << EOF
#!/bin/bash
#SBATCH --job-name=ppspec-fuzz --cpus-per-task=1 --time=00:30:00
#SBATCH --output=$work/tasks/%a.log
# A task: one shard. Exit 1 is ppspec's "failures found", what this campaign is meant to find, so it
# is kept in the shard's .rc file and the task still succeeds; 2 (bad input) or 3 (ppspec failed) fail it.
rc=0
$bin fuzz --shard \${SLURM_ARRAY_TASK_ID}/$SHARDS --cases $per_shard --seed $SEED ${faults_flag[*]} --keep-going --out $work/out/\$SLURM_ARRAY_TASK_ID || rc=\$?
echo "\$rc" > $work/tasks/\$SLURM_ARRAY_TASK_ID.rc
echo "shard \${SLURM_ARRAY_TASK_ID}/$SHARDS on \$(hostname -s), job \${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID}: ppspec fuzz exit \$rc"
[ "\$rc" -le 1 ]
EOF
say ""
say "## the job script (sbatch --wait --array=0-$((SHARDS - 1)))"
sed -e "s|$work|\$WORK|g" "$work/job.sh" | tee -a "$out_file"
t0=$(now)
sbatch_rc=0
jobid=$(timeout 1800 sbatch --parsable --wait --array=0-$((SHARDS - 1)) "$work/job.sh") || sbatch_rc=$?
t_array=$(secs "$t0" "$(now)")
jobid=${jobid%%;*}
say ""
say "## the array: job $jobid, sbatch --wait exit $sbatch_rc after $t_array s"
scontrol -o show job "$jobid" > "$work/jobs.txt" || true
field() { grep -o "\b$1=[^ ]*" <<< "$2" | head -n 1 | cut -d= -f2-; }
while IFS= read -r line; do
  say "task $(field ArrayTaskId "$line"): JobId=$(field JobId "$line") JobState=$(field JobState "$line") ExitCode=$(field ExitCode "$line") RunTime=$(field RunTime "$line") NodeList=$(field NodeList "$line")"
done < <(grep 'ArrayTaskId=' "$work/jobs.txt" | awk '{ match($0, /ArrayTaskId=[0-9]+/); print substr($0, RSTART + 12, RLENGTH - 12) "\t" $0 }' |
  sort -n | cut -f2-)
for i in $(seq 0 $((SHARDS - 1))); do
  [ -f "$work/tasks/$i.log" ] && sed -n '$p' "$work/tasks/$i.log" | tee -a "$out_file"
done
[ "$sbatch_rc" = 0 ] || die "sbatch --wait exited $sbatch_rc: an array task failed (see $work/tasks/*.log)"
for i in $(seq 0 $((SHARDS - 1))); do
  [ -f "$work/out/$i/summary.json" ] || die "shard $i wrote no summary.json (see its log: $(cat "$work/tasks/$i.log" 2> /dev/null))"
done

# --- the merge, and the same campaign in one process ----------------------------------------------
t0=$(now)
merge_rc=0
"$bin" fuzz --merge "$work"/out/* > "$work/merge.stdout" 2> "$work/merge.stderr" || merge_rc=$?
t_merge=$(secs "$t0" "$(now)")
((merge_rc <= 1)) || die "ppspec fuzz --merge exited $merge_rc: $(cat "$work/merge.stderr")"
t0=$(now)
whole_rc=0
"$bin" fuzz --cases "$CASES" --seed "$SEED" "${faults_flag[@]}" --keep-going --out "$work/whole" \
  > "$work/whole.stdout" 2> "$work/whole.stderr" || whole_rc=$?
t_whole=$(secs "$t0" "$(now)")
((whole_rc <= 1)) || die "the one-process campaign exited $whole_rc: $(tail -n 5 "$work/whole.stderr")"

# A report's summary lines, its failures counted by verdict and kind, the failing cases, and the
# first failure in full (the rest are compared in full below, not copied here).
digest() {
  sed -n '1,2p' "$1"
  grep -E '^(FAIL|ERROR) ' "$1" | sed -E 's/^(FAIL|ERROR) (.*) at case [0-9]+ after .*/\2/' | sort | uniq -c |
    awk '{ n = $1; $1 = ""; printf "  %d failing cases:%s\n", n, $0 }'
  echo "  the failing cases: $(grep -E '^(FAIL|ERROR) ' "$1" | sed -E 's/.* at case ([0-9]+) after .*/\1/' | sort -n | paste -sd ' ')"
  echo "  the first of the $(grep -cE '^(FAIL|ERROR) ' "$1") failures as printed:"
  sed -n '3,5p' "$1" | sed 's/^/  /'
}
say ""
say "## ppspec fuzz --merge \$WORK/out/*  (exit $merge_rc, $t_merge s)"
digest "$work/merge.stdout" | sed -e "s|$work|\$WORK|g" | tee -a "$out_file"
say ""
say "## the same campaign in one process: ppspec fuzz --cases $CASES --seed $SEED ${faults_flag[*]} --keep-going --out \$WORK/whole  (exit $whole_rc, $t_whole s)"
digest "$work/whole.stdout" | sed -e "s|$work|\$WORK|g" | tee -a "$out_file"

# --- case for case -------------------------------------------------------------------------------
say ""
say "## scripts/dev/slurm_compare.py"
compare_rc=0
shard_dirs=()
for i in $(seq 0 $((SHARDS - 1))); do shard_dirs+=("$work/out/$i"); done
python3 "$root/scripts/dev/slurm_compare.py" "$SHARDS" "$work/whole" "$work/whole.stdout" "$work/merge.stdout" "${shard_dirs[@]}" \
  > "$work/compare.txt" || compare_rc=$?
sed -e "s|$work|\$WORK|g" "$work/compare.txt" | tee -a "$out_file"
failures=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["failures"])' "$work/whole/summary.json")
shard_s=$(python3 -c 'import json,sys; print(", ".join("%.1f" % json.load(open(d + "/summary.json"))["seconds"] for d in sys.argv[1:]))' \
  "${shard_dirs[@]}")
say ""
say "## summary"
say "shards: $SHARDS (Slurm job $jobid, tasks 0-$((SHARDS - 1)), sbatch --wait exit $sbatch_rc), cases: $CASES, failures found: $failures"
say "wall time: the array $t_array s (the shards' own: $shard_s s), the merge $t_merge s, one process $t_whole s"
if [ "$compare_rc" = 0 ] && [ "$merge_rc" = "$whole_rc" ]; then
  say "merge equals one-process campaign: yes, $CASES cases"
else
  say "merge equals one-process campaign: NO (compare exit $compare_rc, merge exit $merge_rc, one process exit $whole_rc)"
  exit 1
fi
