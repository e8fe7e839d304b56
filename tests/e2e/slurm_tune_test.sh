#!/usr/bin/env bash
# Tuning sharded over a Slurm job array (docs/tuning-cluster.md) on a single-node Slurm that this
# test starts for itself: a munge key, munged, slurmctld and slurmd, all configured, logging and
# keeping their state in a temporary directory (nothing of the machine's /etc/slurm or /etc/munge
# is read or written). It checks that
#   1. Slurm runs a trivial two-task job array (`hostname`);
#   2. scripts/slurm/tune-array.sbatch, submitted as a two-task array, tunes a program with several
#      distinct kernels into one database per shard, each shard holding some of the records;
#   3. scripts/slurm/merge-shards.sbatch, submitted with --dependency=afterok on the array, merges
#      them, and the merged database's export equals that of tuning the program unsharded with the
#      same seed and trials (ignoring the records' dates).
# Where Slurm or munge is not installed, or cannot start here, it prints why and exits 77, which
# CTest reports as skipped, never as passed. It stops every daemon it started on exit.
# Usage: slurm_tune_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
tessera=$build_dir/bin/tessera
export PATH="$PATH:/usr/sbin:/sbin"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

missing=()
for tool in munged slurmctld slurmd sbatch sinfo squeue scontrol scancel python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] ||
  skip "not installed: ${missing[*]} (Debian packages slurm-wlm, munge: scripts/install-deps.sh --test)"
[ -x "$tessera" ] || fail "no tessera binary at $tessera"

# The Slurm of the machine (or of a job this test runs inside) must not be reached.
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SQUEUE_|SINFO_|SCONTROL_)' || true)

# A short path: munge's socket path must fit a sockaddr_un (108 bytes).
work=$(mktemp -d /tmp/tessera-slurm.XXXXXX)
chmod 700 "$work"
# Every process this test starts (daemons, jobs) carries this variable, so the cleanup can find
# exactly those processes, including job steps left behind by a failure.
marker="TESSERA_SLURM_TEST_DIR=$work"
# The cleanup may run from a signal while a command's output goes to a file: it writes here.
exec 3>&1 4>&2
daemon_pids=()
slurm_up=0

show_logs() {
  local f
  for f in "$work"/*.log "$work"/jobs/*.out; do
    [ -s "$f" ] || continue
    echo "--- ${f#"$work"/} (last 30 lines)"
    tail -n 30 "$f"
  done
}

processes_of_this_test() {
  local dir pid
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" != "$$" ] || continue
    { tr '\0' '\n' < "$dir/environ"; } 2>/dev/null | grep -qxF "$marker" && echo "$pid"
  done
  return 0
}

cleanup() {
  local rc=$? pid i left
  trap - EXIT
  exec 1>&3 2>&4
  if [ "$slurm_up" -eq 1 ]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
    for i in $(seq 50); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for i in $(seq 50); do
    left=0
    for pid in "${daemon_pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" -eq 0 ] && break
    sleep 0.2
  done
  for pid in "${daemon_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  # Job steps (slurmstepd and what it ran) that outlived their daemons.
  for pid in $(processes_of_this_test); do kill -KILL "$pid" 2>/dev/null || true; done
  { wait; } 2>/dev/null || true
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || show_logs
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted" >&3; exit 1' INT TERM

# Runs a command for at most S seconds, in the background so that a signal to this script runs
# the cleanup at once rather than after the command.
bounded() {
  local seconds=$1
  shift
  timeout "$seconds" "$@" &
  wait $!
}

# Errors the given logs hold, on one line (the reason a skip gives), leaving out those every fresh
# start logs (no saved state yet, no PMIx library).
log_errors() {
  local pick=$1 lines
  shift
  lines=$(grep -hiE 'error|fatal' "$@" 2>/dev/null |
          grep -viE 'state file|state save file|pmix|MPI: Cannot create context|Zero Bytes were transmitted' |
          "$pick" -n 3 | sed 's/^\[[^]]*\] //' | tr '\n' ' ' || true)
  echo "${lines:-nothing logged}"
}
recent_errors() { log_errors tail "$@"; }
first_errors() { log_errors head "$@"; }

# A daemon that exited: the test is skipped with what it logged.
daemon_failed() {
  local name=$1 log=$2 why
  why=$(recent_errors "$log" "$log.stderr")
  [ "$why" != "nothing logged" ] || why=$(tail -n 2 "$log.stderr" 2>/dev/null | tr '\n' ' ')
  skip "$name cannot start here: ${why:-it exited without a message}"
}

# --- munge -----------------------------------------------------------------------------------
mkdir -m 700 "$work/munge"
if command -v mungekey >/dev/null; then
  mungekey --create --keyfile="$work/munge/munge.key" > "$work/mungekey.log" 2>&1 ||
    skip "mungekey could not create a key: $(cat "$work/mungekey.log")"
else
  dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 status=none
fi
chmod 400 "$work/munge/munge.key"
socket=$work/munge/munge.socket
env "$marker" munged --foreground --force --socket="$socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/munged.seed" \
  > "$work/munged.log.stderr" 2>&1 &
daemon_pids+=($!)
for i in $(seq 50); do
  [ -S "$socket" ] && break
  kill -0 "${daemon_pids[0]}" 2>/dev/null || daemon_failed munged "$work/munged.log"
  sleep 0.1
done
[ -S "$socket" ] || daemon_failed munged "$work/munged.log"

# --- slurm.conf ------------------------------------------------------------------------------
# Two free TCP ports for slurmctld and slurmd, so a Slurm already on this machine is not disturbed.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
node=$(hostname -s 2>/dev/null || uname -n)
cpus=$(nproc)
user=$(id -un)
mkdir -p "$work/state" "$work/spool" "$work/jobs" "$work/shards"
: > "$work/plugstack.conf"
conf=$work/slurm.conf
cat > "$conf" <<EOF
ClusterName=tessera-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$work/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf

# --- slurmctld, slurmd -----------------------------------------------------------------------
env "$marker" slurmctld -D -f "$conf" > "$work/slurmctld.log.stderr" 2>&1 &
daemon_pids+=($!)
ctld_pid=$!
slurm_up=1
env "$marker" slurmd -D -f "$conf" -N "$node" > "$work/slurmd.log.stderr" 2>&1 &
daemon_pids+=($!)
slurmd_pid=$!
# Registration takes a few seconds; a client call waits on munge retries when authentication
# fails, hence the bound on each.
state=""
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
  kill -0 "$ctld_pid" 2>/dev/null || daemon_failed slurmctld "$work/slurmctld.log"
  kill -0 "$slurmd_pid" 2>/dev/null || daemon_failed slurmd "$work/slurmd.log"
  state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] ||
  skip "the Slurm node did not become idle within 30 s (state '${state:-unknown}'): $(recent_errors "$work/slurmd.log" "$work/slurmctld.log")"
echo "slurm is up: node $node, $cpus CPUs, slurmctld port $ctld_port"

# --- 1. Slurm runs a trivial array -----------------------------------------------------------
cd "$work"
# A node that cannot launch jobs (sbatch --wait still exits 0 then) is an environment where Slurm
# cannot run: skipped, with slurmd's reason.
# shellcheck disable=SC2016  # expanded by the job's shell
bounded 60 env "$marker" sbatch --quiet --wait --array=0-1 --output="$work/jobs/hostname-%a.out" \
  --wrap 'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT on $(hostname -s)"' ||
  skip "Slurm started but did not run a two-task array within 60 s: $(recent_errors "$work/slurmd.log" "$work/slurmctld.log")"
for i in 0 1; do
  [ -f "$work/jobs/hostname-$i.out" ] ||
    skip "Slurm started but cannot launch a job here: $(first_errors "$work/slurmd.log")"
  grep -qx "task $i of 2 on $node" "$work/jobs/hostname-$i.out" ||
    fail "array task $i printed '$(cat "$work/jobs/hostname-$i.out")', not 'task $i of 2 on $node'"
done
echo "ok: slurm runs a trivial array"

# --- 2. tune-array.sbatch: one database per shard --------------------------------------------
program='x=torch.randn(64,256); w=torch.randn(256,128); torch.softmax(x@w, dim=-1)'
trials=24
seed=7
bounded 240 env "$marker" TESSERA="$tessera" TESSERA_PROGRAM="$program" TESSERA_SHARD_DIR="$work/shards" \
  TESSERA_TRIALS="$trials" TESSERA_SEED="$seed" \
  sbatch --parsable --wait --array=0-1 --output="$work/jobs/tune-%a.out" \
  "$source_dir/scripts/slurm/tune-array.sbatch" > "$work/array-job" ||
  fail "the tuning array (job $(cat "$work/array-job")) failed"
array_job=$(head -n 1 "$work/array-job")
array_job=${array_job%%;*}
for i in 0 1; do
  [ -s "$work/shards/shard-$i.db" ] || fail "array task $i wrote no $work/shards/shard-$i.db"
done
echo "ok: job array $array_job tuned 2 shards"

# --- 3. merge-shards.sbatch after the array; equals tuning unsharded -------------------------
bounded 60 env "$marker" TESSERA="$tessera" TESSERA_SHARD_DIR="$work/shards" TESSERA_TUNE_DB="$work/merged.db" \
  sbatch --quiet --wait --dependency="afterok:$array_job" --kill-on-invalid-dep=yes \
  --output="$work/jobs/merge.out" "$source_dir/scripts/slurm/merge-shards.sbatch" ||
  fail "the merge job failed"
[ -s "$work/merged.db" ] || fail "the merge job wrote no $work/merged.db"

bounded 240 "$tessera" tune -c "$program" --tune-db "$work/whole.db" --trials "$trials" --seed "$seed" \
  > "$work/whole.log" 2>&1 ||
  { cat "$work/whole.log"; fail "tuning unsharded failed"; }
for db in shards/shard-0 shards/shard-1 merged whole; do
  bounded 30 "$tessera" db export "$work/$db.db" > "$work/$db.json" 2> "$work/export.log" ||
    { cat "$work/export.log"; fail "tessera db export $db.db failed"; }
done
python3 - "$work" <<'EOF' || fail "the merged shards differ from tuning unsharded"
import json, sys
work = sys.argv[1]

def load(name):
    with open(f"{work}/{name}.json") as f:
        doc = json.load(f)
    assert doc.get("format") == "tessera-tuning-db", f"{name}.json: format is {doc.get('format')!r}"
    for record in doc["records"]:
        record.pop("date", None)  # when it was tuned: the one field that may differ
    # The order of records is not part of what a database holds.
    doc["records"].sort(key=lambda r: json.dumps(r, sort_keys=True))
    return doc

shards = [load("shards/shard-0"), load("shards/shard-1")]
merged, whole = load("merged"), load("whole")
for i, shard in enumerate(shards):
    if not shard["records"]:
        sys.exit(f"shard {i} holds no records: the program's kernels were not split between the shards")
if len(merged["records"]) != sum(len(s["records"]) for s in shards):
    sys.exit(f"merged holds {len(merged['records'])} records, the shards "
             f"{[len(s['records']) for s in shards]}")
if merged != whole:
    print("merged:", json.dumps(merged, indent=1, sort_keys=True))
    print("unsharded:", json.dumps(whole, indent=1, sort_keys=True))
    sys.exit("the merged shard databases differ from the unsharded one")
print(f"ok: merged shards ({[len(s['records']) for s in shards]} records) equal tuning unsharded")
EOF
echo "PASS"
