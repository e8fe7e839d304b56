#!/usr/bin/env bash
# gpu_run_rehearsal: the bundle's gpu-run.sh as it runs on a borrowed GPU machine, rehearsed here.
# The bundle (scripts/bundle.sh, no kernel cache) and the stand-in libcuda.so.1 of the tests
# (tests/support/fake_cuda: kernels compute nothing, so outputs mismatch; every Driver API misuse
# ends the process) are copied to a temporary folder and run with `env -i`, with the source and
# build trees hidden behind empty mounts in a private mount namespace (where unshare is allowed;
# elsewhere the run says so and goes on). Checked:
#   1. with the stand-in driver and a deadline shorter than the steps need: the run ends by the
#      deadline (plus the kill grace), the step running at the deadline is cut and marked TIMEOUT,
#      the steps after it are marked skipped, and $OUT holds at most 8 plain files, none over
#      16 MiB or deeper than 2 folders, among them summary.txt, run.log, machine.txt, results.tgz;
#   2. a kill -9 of the script mid-step leaves a readable summary.txt naming the running step;
#   3. with no driver at all it ends within 30 s, exit 3, with a "no GPU" summary.
# Usage: gpu_run_rehearsal.sh SOURCE_DIR BUILD_DIR FAKE_CUDA_DIR
set -uo pipefail
source_dir=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
fake_dir=$3
work=$(mktemp -d)
cleanup() { [ -n "${group:-}" ] && kill -9 -- "-$group" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$source_dir/scripts/bundle.sh" "$work/bundle" "$build_dir" --kernel-cache none > "$work/bundle.log" 2>&1 ||
  { cat "$work/bundle.log"; fail "bundle.sh failed"; }
[ -x "$work/bundle/gpu-run.sh" ] || fail "gpu-run.sh is not at the bundle's root"
[ -n "$(ls "$work/bundle/corpus")" ] || fail "the bundle has no corpus/"
mkdir -p "$work/driver" && cp "$fake_dir/libcuda.so.1" "$work/driver/" || fail "no stand-in driver in $fake_dir"

# isolated CMD...: CMD with an empty environment (plus the given VAR=VALUE words), the source and
# build trees out of reach.
hide=$(unshare -m --propagation private true 2>/dev/null && echo yes)
[ -n "$hide" ] || echo "note: no private mount namespace here (unshare refused): the source tree stays reachable"
isolated() {
  if [ -n "$hide" ]; then
    unshare -m --propagation private bash -c '
      mount -t tmpfs tmpfs "$1" || exit 90
      case "$2" in "$1"/*) ;; *) mount -t tmpfs tmpfs "$2" || exit 90 ;; esac
      shift 2; exec "$@"' _ "$source_dir" "$build_dir" env -i PATH=/usr/bin:/bin "$@"
  else
    env -i PATH=/usr/bin:/bin "$@"
  fi
}

# check_out DIR: at most 8 plain files, none over 16 MiB, none deeper than 2 folders.
check_out() {
  local n
  n=$(find "$1" -mindepth 1 -not -type d | wc -l)
  [ "$n" -le 8 ] || { ls -laR "$1"; fail "$1 holds $n files (at most 8 come back)"; }
  [ -z "$(find "$1" -mindepth 1 -not -type d -not -type f)" ] || fail "$1 holds something that is not a plain file"
  [ -z "$(find "$1" -type f -size +16M)" ] || fail "$1 holds a file over 16 MiB"
  [ -z "$(find "$1" -mindepth 4)" ] || fail "$1 holds a file deeper than 2 folders"
}

# 1. The stand-in driver, a deadline that cuts the run short. The probe and smoke steps run first
# (5 to 15 s on two cores, NVRTC included); with a 45 s deadline and the 8 s reserve the corpus
# step (30 s minimum) runs into the deadline or is skipped for the time left, the suite (40 s
# minimum) and kernel-bench are skipped or cut: every path through the deadline is exercised in
# under a minute, on an idle machine or under the parallel test run (the test is not serial).
quick=$(awk '/^  - id:/ { id = $3 } /^    tiers:/ && /quick/ { print id }' "$work/bundle/bench/suite.yaml" | paste -sd, -)
deadline=45
start=$SECONDS
isolated LD_LIBRARY_PATH="$work/driver" OUT="$work/out" GPU_RUN_SCRATCH="$work/scratch" \
  "$work/bundle/gpu-run.sh" --deadline "$deadline" --steps probe,smoke,corpus,suite,kernel-bench --entries "$quick" \
  > "$work/run.log" 2>&1
rc=$?
took=$((SECONDS - start))
[ "$rc" -ne 90 ] || fail "could not hide the source tree"
cat "$work/out/summary.txt" 2>/dev/null
[ "$rc" -eq 1 ] || { cat "$work/run.log"; fail "gpu-run.sh exited $rc on the stand-in driver (expected 1: its outputs mismatch)"; }
[ "$took" -le $((deadline + 10)) ] || fail "the run took $took s with --deadline $deadline"
check_out "$work/out"
for f in summary.txt run.log machine.txt results.tgz; do [ -s "$work/out/$f" ] || fail "no $f in OUT"; done
grep -q '^probe ' "$work/out/summary.txt" || fail "the summary has no probe line"
grep -q 'Fake GPU (tests)' "$work/scratch/results/logs/smoke.log" || fail "smoke did not run on the stand-in driver"
# Which step the deadline reaches depends on the machine's load (under a parallel build the corpus
# step alone can take 60 s and be cut itself): the suite is cut at its timeout or skipped for the
# time left, and so is the last step.
deadline_mark='(TIMEOUT +124 .*cut at its timeout|skipped .*s left before the deadline)'
grep -Eq "^suite +$deadline_mark" "$work/out/summary.txt" || fail "the deadline neither cut nor skipped the suite step"
# A suite cut at the deadline leaves nothing for the last step; a suite skipped for the time left
# may leave the last step (kernel-bench, about 30 s) enough to finish: then it must end in time.
if grep -Eq '^suite +TIMEOUT' "$work/out/summary.txt"; then
  grep -Eq "^kernel-bench +$deadline_mark" "$work/out/summary.txt" || fail "the deadline neither cut nor skipped the last step"
else
  grep -Eq "^kernel-bench +($deadline_mark|ok )" "$work/out/summary.txt" || fail "the last step neither ran nor was cut or skipped"
fi
if ! grep -Eq "^corpus +$deadline_mark" "$work/out/summary.txt"; then
  grep -q 'gpu-run corpus: .* programs matched the reference' "$work/out/summary.txt" || fail "the corpus step did not report its count"
fi
if grep -q 'fake libcuda:' "$work/scratch/results/logs/"*.log; then
  grep 'fake libcuda:' "$work/scratch/results/logs/"*.log | head -5; fail "a Driver API misuse"
fi
# The listing is read whole first: `tar | grep -q` fails under pipefail when grep stops at the match
# and tar is killed by SIGPIPE writing the rest of the listing.
tar tzf "$work/out/results.tgz" > "$work/results-listing.txt" || fail "results.tgz does not list"
grep -q 'results/logs/probe.log' "$work/results-listing.txt" || fail "results.tgz lacks the probe's log"
[ -z "$(tar tzf "$work/out/results.tgz" | grep '\.safetensors$')" ] || fail "results.tgz holds IO files"
if grep -Eq '^suite +TIMEOUT' "$work/out/summary.txt"; then
  [ -s "$work/out/report.md" ] || fail "the suite's report (written after every entry) is not in OUT"
fi

# 2. kill -9 mid-step: summary.txt stays readable and names the step that was running.
rm -rf "$work/scratch"
setsid bash -c 'exec "$@"' _ env LD_LIBRARY_PATH="$work/driver" OUT="$work/killed" GPU_RUN_SCRATCH="$work/scratch" \
  "$work/bundle/gpu-run.sh" --deadline 120 --steps probe,corpus > "$work/killed.log" 2>&1 &
group=$!
for _ in $(seq 1 100); do
  grep -q '^corpus  *running' "$work/killed/summary.txt" 2>/dev/null && break
  sleep 0.2
done
kill -9 "$group"
sleep 1
kill -9 -- "-$group" 2>/dev/null
group=""
check_out "$work/killed"
head -1 "$work/killed/summary.txt" | grep -q '^gpu-run: started' || { cat "$work/killed/summary.txt"; fail "summary.txt unreadable after kill -9"; }
grep -q '^corpus  *running' "$work/killed/summary.txt" || { cat "$work/killed/summary.txt"; fail "the summary does not name the running step"; }

# 3. No driver at all: a clear "no GPU" within 30 s.
rm -rf "$work/scratch"
start=$SECONDS
isolated OUT="$work/nogpu" GPU_RUN_SCRATCH="$work/scratch" "$work/bundle/gpu-run.sh" > "$work/nogpu.log" 2>&1
rc=$?
took=$((SECONDS - start))
[ "$rc" -eq 3 ] || { cat "$work/nogpu.log"; fail "no driver: exit $rc, expected 3"; }
[ "$took" -le 30 ] || fail "no driver: took $took s"
check_out "$work/nogpu"
grep -q '^gpu: no GPU: ' "$work/nogpu/summary.txt" || { cat "$work/nogpu/summary.txt"; fail "no 'no GPU' in the summary"; }
echo "PASS (stand-in driver run: $((took)) s without a driver)"
