#!/usr/bin/env bash
# Usage: gpu-check.sh [RESULTS_DIR] [--tier quick|full] [--only STEP,...]
#
# Run from a bundle (scripts/bundle.sh) on a machine with an NVIDIA GPU. In order:
#   0. a smoke run of one small program on the cuda target,
#   1. the GPU tests of the test binary (CUDA runtime: module loading, launches, events, graphs,
#      scalar arguments, 2-D grids, the kernel benchmark path),
#   2. `tessera run --target cuda` on the whole op corpus, each output checked against the
#      reference evaluator,
#   3. tessera_kernel_bench over the suite's tier (Google Benchmark JSON, one entry per kernel),
#   4. the suite's quick tier (or --tier full) against PyTorch eager and torch.compile, writing the
#      report (report.md, report.json, plot) under RESULTS_DIR/suite.
# Every step runs even when an earlier one fails; logs go to RESULTS_DIR (default ./gpu-check-<date>)
# and the exit status is non-zero when any step failed. --only runs the named steps (smoke,
# gpu-tests, corpus-cuda, kernel-bench, suite), for machines that limit how long one command runs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
results=""
tier=quick
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tier) tier=${2:?--tier needs quick or full}; shift 2 ;;
    --only) only=",${2:?--only needs a list of steps},"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) results=$1; shift ;;
  esac
done
results=${results:-$PWD/gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$results"

# NVRTC comes from this machine's CUDA installation; the plugin's RPATH names the usual places,
# this covers others.
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  for sub in lib64 lib; do
    if [ -n "$d" ] && [ -d "$d/$sub" ]; then export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d/$sub"; fi
  done
done

for name in $(echo "$only" | tr ',' ' '); do
  case "$name" in
    smoke|gpu-tests|corpus-cuda|kernel-bench|suite) ;;
    *) echo "gpu-check: unknown step '$name' (steps: smoke, gpu-tests, corpus-cuda, kernel-bench, suite)" >&2; exit 2 ;;
  esac
done
wanted() { [ -z "$only" ] || case "$only" in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

failed=()
step() {  # step NAME COMMAND...: runs one step, its output to the terminal and RESULTS/NAME.log
  local name=$1; shift
  wanted "$name" || return 0
  echo "== $name: $*" | tee "$results/$name.log"
  local start=$SECONDS
  "$@" 2>&1 | tee -a "$results/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$results/$name.log"
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "bundle: $here"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  command -v nvcc >/dev/null && nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null
} > "$results/machine.txt" 2>&1
cat "$results/machine.txt"

# A skipped GPU test passes in GoogleTest's eyes; here it means the GPU was not usable.
no_skips() {  # no_skips STEP JSON: fails STEP when its GoogleTest JSON reports skipped tests
  wanted "$1" || return 0
  if grep -q '"result": "SKIPPED"' "$2" 2>/dev/null; then
    echo "== $1: tests were SKIPPED (no usable GPU?); see $1.log" | tee -a "$results/$1.log"
    failed+=("$1 (skipped tests)")
  fi
}

step smoke "$here/bin/tessera" run --target cuda -c "torch.relu(torch.randn(4, 1000)) * 2"
step gpu-tests "$here/bin/tessera_tests" \
  --gtest_filter='CudaGpuTest.*:KernelAbiTest.Gpu*:TimingExtensionGpuTest.*:-CudaGpuTest.CliRunsTheCorpus' \
  --gtest_output="json:$results/gpu-tests.json"
no_skips gpu-tests "$results/gpu-tests.json"
step corpus-cuda "$here/bin/tessera_tests" --gtest_filter='CudaGpuTest.CliRunsTheCorpus' \
  --gtest_output="json:$results/corpus-cuda.json"
no_skips corpus-cuda "$results/corpus-cuda.json"
if [ -f "$here/bench/suite.yaml" ]; then
  step kernel-bench "$here/bin/tessera_kernel_bench" --suite "$here/bench/suite.yaml" --tier "$tier" \
    --benchmark_out="$results/kernel-bench.json" --benchmark_out_format=json
  step suite "$here/bin/tessera" bench --suite "$here/bench/suite.yaml" --tier "$tier" --out "$results/suite"
elif wanted suite || wanted kernel-bench; then
  failed+=("suite (bench/suite.yaml is not in the bundle)")
fi

if [ ${#failed[@]} -eq 0 ]; then
  echo "gpu-check: every step passed; results in $results"
  exit 0
fi
echo "gpu-check: ${#failed[@]} step(s) failed: ${failed[*]}; results in $results"
exit 1
