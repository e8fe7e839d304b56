#!/usr/bin/env bash
# Usage: OUT=DIR gpu-run.sh [--deadline SECONDS] [--entries ID,...] [--steps STEP,...]
#
# One call on a borrowed GPU machine that learns the most before --deadline (default 500 s). Run
# from a bundle (scripts/bundle.sh); the machine needs a CUDA driver and, for the PyTorch steps,
# python3 with torch. Steps, in order of what they teach (bench/README.md, "A GPU run in one call"):
#   probe         GPU, driver, clocks, NVRTC and CUDA headers (NVRTC from PyTorch's wheels when the
#                 CUDA installation has none), ldd of every binary, glibc, libstdc++, python, torch
#   smoke         f32 and bf16 programs, RMSNorm over 16384 columns (64 KB of dynamic shared
#                 memory), rows split across thread-block clusters (sm_90), run --bench with
#                 CUDA-graph capture
#   gpu-tests     the GPU tests of the test binary (the corpus is the next step's)
#   tma           TMA schedules (--knob tma_copy.TMA=true; sm_90 and newer): matmuls in f32 and
#                 bf16 against the reference, swizzled slabs (32/64/128B), one under compute-sanitizer memcheck and racecheck,
#                 and a 1024^3 f32 matmul timed with TMA and with the default cp.async schedule
#   corpus        every op-corpus program on the GPU against the reference, in parallel processes
#                 sharing one kernel cache; the first failures re-run with --check-intermediates
#   suite         the suite against PyTorch eager (tessera bench; --entries, any suite ids; default:
#                 the quick tier without the 7B/8B decoder layers and lm_heads)
#   tune          tessera tune --suite --measurer gpu on the quick tier's memory-bound and decode
#                 entries, then bench --tune-db on them; and the cost model calibrated to the suite's
#                 kernel times (cost_model.yaml)
#   memory-bound  bench/memory-bound.yaml (the memory-bound issue's RMSNorm, softmax, SwiGLU product
#                 and RoPE sizes, f32 and bf16) against eager PyTorch and torch.compile
#   kernel-bench  tessera_kernel_bench on a short list, L2 flushed
#   sanitizer     compute-sanitizer memcheck, racecheck and initcheck on five small programs
#   hf-check      bench/hf_check.py --target cuda: tiny Llama/Qwen2/Qwen3 against transformers
#   torch-compile torch.compile columns for a few small entries, with the time that is left
# Each step runs under its own timeout, bounded by the time left; one that would get less than its
# minimum is skipped and says so. Work happens in a scratch folder (GPU_RUN_SCRATCH, default a new
# one under TMPDIR); after every step (and every 20 s during one) at most seven files are refreshed
# in $OUT, each written whole and renamed into place, so a kill at any moment leaves what was done:
#   summary.txt  every step: result, exit code, seconds, a note     run.log  the steps' output
#   machine.txt  the probe                                          results.tgz  small logs and JSON
#   report.md, speedup.png  the suite's report                      kernel-bench.json
# Exit: 0 every step that ran passed; 1 a step failed or timed out; 2 usage; 3 no usable GPU.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"
all_steps="probe smoke gpu-tests tma corpus suite tune memory-bound kernel-bench sanitizer hf-check torch-compile"

# The programs of the smoke and sanitizer steps (bundle.sh pre-builds their kernels: --list-programs).
smoke_programs=(
  "torch.relu(torch.randn(4, 1000)) * 2"
  "torch.softmax(torch.randn(8, 4096, dtype=torch.bfloat16), dim=-1)"
  "nn.RMSNorm(16384)(torch.randn(4, 16384))"  # 64 KB of shared memory: past the 48 KB default
  "x=torch.randn(512,512); w=torch.randn(512,512); x @ w"  # 8 x 4 register tiles, 16-byte shared loads
  "g=torch.randn(64,512); u=torch.randn(64,512); wd=torch.randn(512,256); (F.silu(g) * u) @ wd"  # a SlabMap, a 2-D grid
  "nn.RMSNorm(65536)(torch.randn(32, 65536))"  # rows split across clusters of 8: barrier.cluster, DSMEM (sm_90)
  "nn.LayerNorm(32768)(torch.randn(16, 32768))"  # clusters of 8, two cluster Combines a row
)
smoke_bench_program="nn.RMSNorm(2048)(torch.randn(1, 32, 2048))"
sanitizer_programs=(
  "nn.RMSNorm(16384)(torch.randn(2, 16384))"  # 64 KB of dynamic shared memory
  "nn.RMSNorm(2048)(torch.randn(1, 4, 2048))"  # cp.async staging
  "F.scaled_dot_product_attention(torch.randn(1, 4, 16, 32), torch.randn(1, 2, 16, 32), torch.randn(1, 2, 16, 32), is_causal=True, enable_gqa=True)"
  "torch.softmax(torch.randn(4, 1024, dtype=torch.bfloat16), dim=-1)"
  "nn.Linear(4096, 1024, bias=False)(torch.randn(1, 4096))"  # a decode GEMV: a block per row, 16-byte loads
)
# The tma step's programs (ring-buffered, pipelined TMA slabs under the default heuristics) and the
# matmul it times against the default schedule.
tma_programs=(
  "x=torch.randn(256,512); w=torch.randn(512,256); x @ w"
  "x=torch.randn(256,1024, dtype=torch.bfloat16); w=torch.randn(1024,512, dtype=torch.bfloat16); x @ w"
  "nn.Linear(1024, 512)(torch.randn(4, 64, 1024))"
  "torch.bmm(torch.randn(4, 128, 256), torch.randn(4, 256, 128))"
)
tma_bench_program="x=torch.randn(1024,1024); w=torch.randn(1024,1024); x @ w"
# Swizzled TMA slabs (split_inner_for_swizzle): a block whose warps read two rows of x, so the
# swizzle has conflicts to remove; each swizzle once.
tma_swizzle_program="x=torch.randn(256,512); w=torch.randn(512,256); x @ w"
tma_swizzle_knobs=(--knob launch_geometry.BM=32 --knob launch_geometry.BN=64 --knob register_tile.TM=2 --knob register_tile.TN=4)
# Suite entries: the quick tier without the giant ones (7B/8B decoder layers and lm_heads: minutes
# of parameter generation and GB of IO each); the kernel-bench and torch.compile steps' short lists.
default_entries() {
  awk '/^  - id:/ { id = $3 } /^    tiers:/ && /quick/ { print id }' "$here/bench/suite.yaml" |
    grep -Ev '^(qwen2\.5-7b|llama3-8b)-.*-(decoder_layer|final_norm_lm_head)$' | paste -sd, -
}
kernel_bench_entries=tinyllama-prefill128-f32-rmsnorm,llama3-8b-decode-kv512-f32-rmsnorm,qwen2.5-7b-prefill512-bf16-rmsnorm,tinyllama-decode-kv512-f32-softmax,qwen2.5-7b-prefill128-bf16-softmax,llama3-8b-prefill512-f32-rope,tinyllama-decode-kv512-f32-rope
# The tune step's entries: the quick tier's memory-bound and decode-step entries (the prefill
# projections' candidates would spend the step on the reference check of GFLOP-sized matmuls).
tune_entries=tinyllama-prefill128-f32-rmsnorm,tinyllama-decode-kv512-f32-rope,tinyllama-decode-kv512-f32-softmax,qwen2.5-7b-decode-kv512-f32-qkv_proj,llama3-8b-prefill512-f32-rope,llama3-8b-prefill512-f32-softmax,llama3-8b-decode-kv512-f32-rmsnorm,llama3-8b-decode-kv512-f32-down_proj_residual,tinyllama-decode-kv512-bf16-swiglu,qwen2.5-7b-prefill128-bf16-rope,qwen2.5-7b-prefill128-bf16-softmax,qwen2.5-7b-prefill512-bf16-rmsnorm,qwen2.5-7b-decode-kv512-bf16-o_proj_residual,llama3-8b-decode-kv512-bf16-attention
compile_entries=tinyllama-prefill128-f32-rmsnorm,tinyllama-decode-kv512-f32-softmax,tinyllama-decode-kv512-f32-rope,qwen2.5-7b-prefill128-bf16-softmax

case "${1:-}" in
  --list-programs) printf '%s\n' "${smoke_programs[@]}" "$smoke_bench_program" "${sanitizer_programs[@]}"; exit 0 ;;
  --list-entries) default_entries; exit 0 ;;
esac

ldconfig_p() { { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null; }

# ---- the probe: what the machine is, and whether the bundle can run there
step_probe() {
  local m=$GPU_RUN_RESULTS/machine.txt
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) memory"
    echo "bundle: $here"
    sed 's/^/  /' "$here/share/tessera/build-info.txt" 2>/dev/null
    if command -v nvidia-smi >/dev/null; then
      echo "nvidia-smi:"
      timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu --format=csv 2>&1 | sed 's/^/  /'
      timeout 20 nvidia-smi -q -d PERFORMANCE,CLOCK > "$GPU_RUN_RESULTS/nvidia-smi-q.txt" 2>&1
    else
      echo "nvidia-smi: not on PATH"
    fi
    echo "libcuda.so.1: $(ldconfig_p | awk '/libcuda\.so\.1 / { print $NF; exit }')${LD_LIBRARY_PATH:+ (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)}"
    echo "libnvrtc.so.13: $(ldd "$here/lib/tessera/plugins/libcuda.so" 2>/dev/null | awk '/libnvrtc/ { print $3; exit }')"
    local nvrtc_dir
    nvrtc_dir=$(ldd "$here/lib/tessera/plugins/libcuda.so" 2>/dev/null | awk '/libnvrtc/ && $3 ~ /^\// { print $3; exit }')
    if [ -n "$nvrtc_dir" ] && command -v python3 >/dev/null; then
      echo "NVRTC version here: $(timeout 10 python3 -c '
import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); a = ctypes.c_int(); b = ctypes.c_int()
l.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)); print(f"{a.value}.{b.value}")' "$nvrtc_dir" 2>&1)"
    fi
    for dir in $(sed -n 's/^cuda include dirs: //p' "$here/share/tessera/build-info.txt" 2>/dev/null | tr '|' ' '); do
      if [ -f "$dir/cuda_fp16.h" ] && [ -f "$dir/cuda_bf16.h" ]; then echo "CUDA headers: $dir (cuda_fp16.h, cuda_bf16.h present)"
      else echo "CUDA headers: $dir MISSING here (NVRTC may not find cuda_fp16.h / cuda_bf16.h)"; fi
    done
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    local cxx
    cxx=$(ldconfig_p | awk '/libstdc\+\+\.so\.6 / { print $NF; exit }')
    echo "libstdc++: ${cxx:-?} (newest $(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "${cxx:-/dev/null}" 2>/dev/null | sort -t. -k3 -n | tail -1))"
    echo "bundle needs: $(sed -n 's/^glibc needed: //p' "$here/share/tessera/build-info.txt" 2>/dev/null)"
    echo "python3: $(command -v python3 || echo none) $(python3 --version 2>&1)"
    timeout 60 python3 -c '
import importlib
for name in ("torch", "transformers", "safetensors", "numpy", "matplotlib"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" (CUDA {m.version.cuda}, GPU: {m.cuda.get_device_name(0) if m.cuda.is_available() else None})"
        print(f"{name}: {m.__version__}{extra}")
    except Exception as e:
        print(f"{name}: not usable ({type(e).__name__}: {e})")' 2>&1
    echo "compute-sanitizer: $(command -v compute-sanitizer || echo 'not on PATH')   ncu: $(command -v ncu || echo 'not on PATH')"
    echo "kernel cache: $(ls "$GPU_RUN_CACHE" 2>/dev/null | grep -c '\.cubin$') kernels pre-built with NVRTC $(sed -n 's/^nvrtc: //p' "$here/share/tessera/build-info.txt" 2>/dev/null) for $(sed -n 's/^kernel cache arch: //p' "$here/share/tessera/build-info.txt" 2>/dev/null)"
  } > "$m" 2>&1
  cat "$m"
  # Every library of every binary: the full ldd in the results, what is missing in machine.txt.
  local missing=0
  while IFS= read -r f; do
    echo "== $f"; ldd "$f" 2>&1
  done < <(find "$here/bin" "$here/lib" -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null | sort) > "$GPU_RUN_RESULTS/ldd.txt"
  if grep -q 'not found' "$GPU_RUN_RESULTS/ldd.txt"; then
    missing=1
    { echo "ldd: libraries not found:"; awk '/^== / { f = $2 } /not found/ { print "  " f ": " $1 }' "$GPU_RUN_RESULTS/ldd.txt"; } | tee -a "$m"
  else
    echo "ldd: every library of every binary resolves" | tee -a "$m"
  fi
  # Whether the cuda target can run here: one tiny program, also the first NVRTC compile.
  local out
  out=$(timeout 60 "$here/bin/tessera" run --target cuda --cache-dir "$GPU_RUN_CACHE" -c "torch.randn(4) + 1" 2>&1)
  local rc=$?
  echo "$out" | sed 's/^/  /' >> "$m"
  if echo "$out" | grep -q 'no CUDA driver / GPU found\|no CUDA-capable device\|CUDA_ERROR_NO_DEVICE'; then
    echo "gpu-run probe: no GPU: $(echo "$out" | grep -o 'no CUDA driver / GPU found.*\|no CUDA-capable device.*\|CUDA_ERROR_NO_DEVICE.*' | head -1)"
    return 1
  fi
  local smi=""
  command -v nvidia-smi >/dev/null && smi=$(timeout 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  echo "gpu-run probe: gpu: ${smi:-no nvidia-smi}; tessera's device: $(echo "$out" | sed -n 's/^target: cuda  device: \([^ ]* ([^)]*)\).*/\1/p' | head -1)"
  [ "$missing" -eq 0 ] && [ "$rc" -eq 0 ]
}

# ---- the op corpus: one process per program, in parallel, sharing the kernel cache
step_corpus() {
  local dir=$GPU_RUN_RESULTS/corpus
  mkdir -p "$dir"
  local jobs
  jobs=$(nproc 2>/dev/null || echo 4)
  [ "$jobs" -gt 8 ] && jobs=8  # the GPU is shared; more processes only queue
  # Each program's output in corpus/<name>.log, its exit code in corpus/<name>.rc.
  find "$here/corpus" -name '*.py' -print0 | sort -z | xargs -0 -P "$jobs" -I{} bash -c '
    f=$1; name=$(basename "$f" .py)
    timeout -k 5 120 "$2/bin/tessera" run --target cuda --cache-dir "$3" -c "$(cat "$f")" > "$4/$name.log" 2>&1
    echo $? > "$4/$name.rc"' _ {} "$here" "$GPU_RUN_CACHE" "$dir"
  local total=0 failed=() name
  for rc in "$dir"/*.rc; do
    [ -f "$rc" ] || continue
    total=$((total + 1))
    name=$(basename "$rc" .rc)
    if [ "$(cat "$rc")" = 0 ]; then echo "ok     $name"; else failed+=("$name"); fi
  done
  for name in "${failed[@]}"; do
    echo "FAILED $name (exit $(cat "$dir/$name.rc")): $(grep -m1 -E 'error|MISMATCH' "$dir/$name.log" | cut -c1-160)"
  done
  # The first failures again, naming the first kernel whose output diverges.
  for name in "${failed[@]:0:3}"; do
    echo "== $name --check-intermediates"
    timeout -k 5 120 "$here/bin/tessera" run --target cuda --cache-dir "$GPU_RUN_CACHE" --check-intermediates \
      -c "$(cat "$here/corpus/$name.py")" > "$dir/$name.intermediates.log" 2>&1
    grep -E 'error|note|MISMATCH' "$dir/$name.intermediates.log" | head -5
  done
  echo "gpu-run corpus: $((total - ${#failed[@]})) of $total programs matched the reference${failed:+; failed: $(IFS=,; echo "${failed[*]:0:10}")}"
  [ "$total" -gt 0 ] && [ "${#failed[@]}" -eq 0 ]
}

# ---- one step, run by the script itself under `timeout` (every variable it needs is exported)
if [ "${1:-}" = "--run-step" ]; then
  step=$2
  tessera=("$here/bin/tessera")
  cache=(--cache-dir "$GPU_RUN_CACHE")
  case "$step" in
    probe)
      step_probe; exit $? ;;
    smoke)
      rc=0
      for p in "${smoke_programs[@]}"; do
        echo "== tessera run --target cuda -c \"$p\""
        "${tessera[@]}" run --target cuda "${cache[@]}" -c "$p" || rc=1
      done
      p=$smoke_bench_program
      echo "== tessera run --target cuda --bench --graphs --flush-l2 -c \"$p\""
      "${tessera[@]}" run --target cuda "${cache[@]}" --bench --graphs --flush-l2 --iterations 20 \
        --json "$GPU_RUN_RESULTS/smoke-bench.json" -c "$p" || rc=1
      exit $rc ;;
    gpu-tests)
      "$here/bin/tessera_tests" \
        --gtest_filter='CudaGpuTest.*:KernelAbiTest.Gpu*:TimingExtensionGpuTest.*:-CudaGpuTest.CorpusMatchesTheReference:CudaGpuTest.CliRunsTheCorpus' \
        --gtest_output="json:$GPU_RUN_RESULTS/gpu-tests.json"
      rc=$?
      if grep -q '"result": "SKIPPED"' "$GPU_RUN_RESULTS/gpu-tests.json" 2>/dev/null; then
        echo "gpu-run: GPU tests were SKIPPED: the GPU is not usable by the test binary"; exit 1
      fi
      exit $rc ;;
    tma)
      rc=0
      tma=(--knob tma_copy.TMA=true)
      for p in "${tma_programs[@]}"; do
        echo "== tessera run --target cuda ${tma[*]} -c \"$p\""
        "${tessera[@]}" run --target cuda "${cache[@]}" "${tma[@]}" -c "$p" || rc=1
      done
      for swizzle in 128B 64B 32B; do
        knobs=("${tma[@]}" "${tma_swizzle_knobs[@]}" --knob "split_inner_for_swizzle.SWIZZLE=$swizzle")
        echo "== tessera run --target cuda ${knobs[*]} -c \"$tma_swizzle_program\""
        "${tessera[@]}" run --target cuda "${cache[@]}" "${knobs[@]}" -c "$tma_swizzle_program" || rc=1
      done
      if command -v compute-sanitizer >/dev/null; then
        for tool in memcheck racecheck; do
          echo "== compute-sanitizer --tool $tool: ${tma[*]} ${tma_programs[0]}"
          compute-sanitizer --tool "$tool" --error-exitcode 9 "${tessera[@]}" run --target cuda "${cache[@]}" "${tma[@]}" \
            -c "${tma_programs[0]}" || rc=1
        done
      else
        echo "gpu-run tma: compute-sanitizer is not on PATH: the TMA schedule is not sanitized"
      fi
      for choice in true false; do
        echo "== tessera run --target cuda --bench --knob tma_copy.TMA=$choice -c \"$tma_bench_program\""
        "${tessera[@]}" run --target cuda "${cache[@]}" --bench --flush-l2 --iterations 20 --knob "tma_copy.TMA=$choice" \
          --json "$GPU_RUN_RESULTS/tma-bench-$choice.json" -c "$tma_bench_program" || rc=1
      done
      exit $rc ;;
    corpus)
      step_corpus; exit $? ;;
    suite)
      python_ok=$(command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null && echo yes)
      [ -n "$python_ok" ] || echo "gpu-run: python3 with torch is not here: Tessera's columns only"
      exec "${tessera[@]}" bench --suite "$here/bench/suite.yaml" --tier "$GPU_RUN_TIER" --entries "$GPU_RUN_ENTRIES" \
        --out "$GPU_RUN_RESULTS/suite" "${cache[@]}" --baseline-mode none --baseline-every 8 --io-limit 2 \
        --iterations 20 ;;
    tune)
      rc=0
      # The cost model fitted to the suite step's kernel times (no GPU needed; first, as it is quick).
      if [ -f "$GPU_RUN_RESULTS/suite/report.json" ]; then
        "${tessera[@]}" tune --calibrate "$GPU_RUN_RESULTS/suite" -o "$GPU_RUN_RESULTS/cost_model.yaml" || rc=1
      else
        echo "gpu-run tune: no suite report to calibrate the cost model from (the suite step did not run)"
      fi
      # Tuning, with what is left of the step minus the tuned bench's 60 s; the database keeps every
      # task finished before a timeout. A GPU trial costs about 0.8 s (a worker per candidate), so
      # the budget is trials (6 per task at least, 120 in all), not a short time budget, which on
      # the first run left most tasks one trial (bench/results/h200-2026-11-28, run 2).
      budget=$(( ${GPU_RUN_STEP_SECONDS:-150} - 60 ))
      echo "== tessera tune --suite --measurer gpu (timeout ${budget} s): $tune_entries"
      timeout -k 5 "$budget" "${tessera[@]}" tune --suite "$here/bench/suite.yaml" --entries "$tune_entries" \
        --measurer gpu --tune-db "$GPU_RUN_RESULTS/tune.db" --jobs 4 --min-trials 6 --trials 120 --patience 8 \
        --time-budget $(( budget - 20 )) || rc=1
      "${tessera[@]}" db list "$GPU_RUN_RESULTS/tune.db" > "$GPU_RUN_RESULTS/tune-db.txt" 2>&1
      echo "== tessera bench --tune-db on the tuned entries"
      "${tessera[@]}" bench --suite "$here/bench/suite.yaml" --tier quick --entries "$tune_entries" \
        --tune-db "$GPU_RUN_RESULTS/tune.db" --out "$GPU_RUN_RESULTS/tuned-suite" "${cache[@]}" \
        --baseline-mode none --io-limit 2 --iterations 20 || rc=1
      echo "gpu-run tune: $(grep -h '^tune: [0-9]* trials in' "$GPU_RUN_RESULTS/logs/tune.log" 2>/dev/null | tail -1 | cut -c1-150)"
      exit $rc ;;
    memory-bound)
      exec "${tessera[@]}" bench --suite "$here/bench/memory-bound.yaml" --tier full \
        --out "$GPU_RUN_RESULTS/memory-bound" "${cache[@]}" --baseline-mode default --io-limit 4 --iterations 20 ;;
    kernel-bench)
      exec "$here/bin/tessera_kernel_bench" --suite "$here/bench/suite.yaml" --entries "$kernel_bench_entries" \
        "${cache[@]}" --flush-l2 --benchmark_min_time=0.05 --benchmark_out="$GPU_RUN_RESULTS/kernel-bench.json" \
        --benchmark_out_format=json ;;
    sanitizer)
      command -v compute-sanitizer >/dev/null || { echo "gpu-run: compute-sanitizer is not on PATH"; exit 1; }
      rc=0
      for p in "${sanitizer_programs[@]}"; do
        for tool in memcheck racecheck initcheck; do
          echo "== compute-sanitizer --tool $tool: $p"
          compute-sanitizer --tool "$tool" --error-exitcode 9 "${tessera[@]}" run --target cuda "${cache[@]}" -c "$p" || rc=1
        done
      done
      exit $rc ;;
    hf-check)
      exec python3 "$here/bench/hf_check.py" --tessera "$here/bin/tessera" --target cuda --work-dir "$GPU_RUN_SCRATCH/hf" ;;
    torch-compile)
      exec python3 "$here/bench/pytorch_baseline.py" --suite "$here/bench/suite.yaml" \
        --entries "$compile_entries" --mode default --iterations 20 \
        --out "$GPU_RUN_RESULTS/torch-compile.json" --max-seconds "$(( ${GPU_RUN_STEP_SECONDS:-60} - 30 ))" ;;
  esac
  echo "gpu-run: unknown step '$step'" >&2
  exit 2
fi

# ---- the driver
usage() { sed -n '2,/^set -uo pipefail/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'; }
deadline=500
entries=""
steps="$all_steps"
while [ $# -gt 0 ]; do
  case "$1" in
    --deadline) deadline=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
    --entries) entries=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
    --steps) steps=$(echo "${2:-}" | tr ',' ' '); shift 2 || { usage >&2; exit 2; } ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-run: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$deadline" in ''|*[!0-9]*) echo "gpu-run: --deadline needs a whole number of seconds, got '$deadline'" >&2; exit 2 ;; esac
for s in $steps; do
  case " $all_steps " in *" $s "*) ;; *) echo "gpu-run: unknown step '$s' (steps: $all_steps)" >&2; exit 2 ;; esac
done
if [ -z "${OUT:-}" ]; then
  echo "gpu-run: set OUT to the folder the results go to (OUT=DIR gpu-run.sh)" >&2
  exit 2
fi
mkdir -p "$OUT" || { echo "gpu-run: cannot create OUT=$OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)

scratch=${GPU_RUN_SCRATCH:-$(mktemp -d "${TMPDIR:-/tmp}/tessera-gpu-run.XXXXXX")}
mkdir -p "$scratch/results/logs" "$scratch/cache" "$scratch/xdg" || { echo "gpu-run: cannot create $scratch" >&2; exit 2; }
export GPU_RUN_SCRATCH=$scratch GPU_RUN_RESULTS=$scratch/results GPU_RUN_CACHE=$scratch/cache
export XDG_CACHE_HOME=$scratch/xdg HOME=${HOME:-$scratch} PYTHONUNBUFFERED=1
logs=$scratch/results/logs
reserve=8  # seconds kept for the last refresh of $OUT

# The suite's tier: quick for the default entries, full (every entry) for those --entries names.
export GPU_RUN_TIER=full
[ -z "$entries" ] && entries=$(default_entries) && GPU_RUN_TIER=quick
export GPU_RUN_ENTRIES=$entries

# The pre-warmed kernel cache travels with the bundle; it is used when this machine's NVRTC is
# the one that filled it (the cache key holds the NVRTC version, so a mismatch only misses).
if [ -d "$here/kernel-cache" ]; then cp -R "$here/kernel-cache/." "$scratch/cache/" 2>/dev/null; fi

# NVRTC: the CUDA installation's, else the one PyTorch's CUDA wheels ship (the probe reports which).
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  for sub in lib64 lib targets/x86_64-linux/lib; do
    if [ -n "$d" ] && [ -e "$d/$sub/libnvrtc.so.13" ]; then
      export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d/$sub"
      break
    fi
  done
done
if ldd "$here/lib/tessera/plugins/libcuda.so" 2>/dev/null | grep -q 'libnvrtc.*not found'; then
  wheel=$(timeout 20 python3 -c 'import nvidia, os; print(os.pathsep.join(nvidia.__path__))' 2>/dev/null)
  for w in $(echo "$wheel" | tr ':' ' '); do
    lib=$(find "$w" -name 'libnvrtc.so.13*' -not -name '*builtins*' 2>/dev/null | head -1)
    [ -n "$lib" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$lib")" && break
  done
fi

# ---- $OUT: at most seven files, each replaced whole
publish() {  # publish SRC NAME: copies SRC to $OUT/NAME through a temp file and a rename
  [ -f "$1" ] || return 0
  cp "$1" "$OUT/.$2.tmp" 2>/dev/null && mv -f "$OUT/.$2.tmp" "$OUT/$2"
}
started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
status_file=$scratch/steps.txt  # NAME|RESULT|EXIT|SECONDS|NOTE
: > "$status_file"
gpu_line="(not probed yet)"
write_summary() {  # write_summary [RUNNING-LINE]
  local name result code secs note
  {
    echo "gpu-run: started $started_at, deadline $deadline s, elapsed $SECONDS s"
    echo "bundle: $here ($(cat "$here/share/tessera/build-info.txt" 2>/dev/null | head -1))"
    echo "gpu: $gpu_line"
    echo "scratch: $scratch"
    printf '%-14s %-9s %5s %8s  %s\n' step result exit seconds note
    while IFS=$'|' read -r name result code secs note; do
      printf '%-14s %-9s %5s %8s  %s\n' "$name" "$result" "$code" "$secs" "$note"
    done < "$status_file"
    [ -n "${1:-}" ] && echo "$1"
  } > "$scratch/summary.txt"
  publish "$scratch/summary.txt" summary.txt
}
refresh_out() {  # everything but the summary
  tail -c 8000000 "$scratch/run.log" > "$scratch/run.log.out" 2>/dev/null && publish "$scratch/run.log.out" run.log
  publish "$scratch/results/machine.txt" machine.txt
  publish "$scratch/results/suite/report.md" report.md
  publish "$scratch/results/suite/speedup.png" speedup.png
  publish "$scratch/results/kernel-bench.json" kernel-bench.json
  # Small files only (never the IO files), and at most 16 MB packed.
  for limit in 2048k 256k 32k; do
    (cd "$scratch" && find results -type f -size -"$limit" -not -path 'results/suite/io/*' -print0 |
       tar czf "$scratch/results.tgz" --null -T - 2>/dev/null)
    [ "$(stat -c %s "$scratch/results.tgz" 2>/dev/null || echo 0)" -lt 16000000 ] && break
  done
  publish "$scratch/results.tgz" results.tgz
}
record() {  # record NAME RESULT EXIT SECONDS NOTE
  printf '%s|%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" "${5//|//}" >> "$status_file"
  echo "== $1: $2 (exit $3, $4 s) $5" >> "$scratch/run.log"
}

# Why a step cannot run on this machine ("" when it can), from what the probe found.
missing_for() {
  local m=$scratch/results/machine.txt
  case "$1" in
    suite|kernel-bench|tune) [ -f "$here/bench/suite.yaml" ] || echo "bench/suite.yaml is not in the bundle" ;;
    memory-bound) [ -f "$here/bench/memory-bound.yaml" ] || echo "bench/memory-bound.yaml is not in the bundle" ;;
    sanitizer) command -v compute-sanitizer >/dev/null || echo "compute-sanitizer is not on PATH" ;;
    hf-check) grep -q '^torch: [0-9]' "$m" && grep -q '^transformers: [0-9]' "$m" || echo "python3 has no usable torch and transformers" ;;
    torch-compile) grep -q '^torch: [0-9]' "$m" || echo "python3 has no usable torch" ;;
  esac
}

failures=0
# run_step NAME CAP MIN: runs the step under a timeout of CAP seconds, or less when less is left
# (minus the reserve); skips it when fewer than MIN seconds are left.
run_step() {
  local name=$1 cap=$2 min=$3
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  local missing
  missing=$(missing_for "$name")
  if [ -n "$missing" ]; then
    record "$name" skipped - 0 "$missing"
    write_summary
    return 0
  fi
  local left=$(( deadline - SECONDS - reserve ))
  if [ "$left" -lt "$min" ]; then
    record "$name" skipped - 0 "${left} s left before the deadline, the step needs at least $min"
    write_summary
    return 0
  fi
  local t=$(( cap < left ? cap : left ))
  local t0=$SECONDS
  echo "== $name: start at $t0 s, timeout $t s" >> "$scratch/run.log"
  write_summary "$(printf '%-14s %-9s %5s %8s  %s' "$name" running - - "started at $t0 s, timeout $t s")"
  # Refresh $OUT every 20 s while the step runs (this loop is the only writer meanwhile).
  ( while sleep 20; do refresh_out; write_summary "$(printf '%-14s %-9s %5s %8s  %s' "$name" running - - \
      "started at $t0 s, timeout $t s, $(( SECONDS - t0 )) s so far")"; done ) &
  local refresher=$!
  GPU_RUN_STEP_SECONDS=$t timeout -k 5 "$t" "$self" --run-step "$name" > "$logs/$name.log" 2>&1 < /dev/null
  local rc=$?
  kill "$refresher" 2>/dev/null; wait "$refresher" 2>/dev/null
  local secs=$(( SECONDS - t0 ))
  { echo "== $name output (last 300 lines; all of it in results.tgz, results/logs/$name.log)"; tail -n 300 "$logs/$name.log"; } >> "$scratch/run.log"
  local note
  note=$(grep -E '^gpu-run( [a-z-]+)?: ' "$logs/$name.log" | tail -1 | cut -c1-200)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    record "$name" TIMEOUT "$rc" "$secs" "cut at its timeout of $t s${note:+; $note}"
    failures=$((failures + 1))
  elif [ "$rc" -eq 0 ]; then
    record "$name" ok 0 "$secs" "$note"
  else
    record "$name" FAILED "$rc" "$secs" "${note:-see run.log}"
    failures=$((failures + 1))
  fi
  refresh_out
  write_summary
  return "$rc"
}

echo "gpu-run: results in $OUT, scratch $scratch, deadline $deadline s" | tee -a "$scratch/run.log"
write_summary

# Probe first; without a usable GPU nothing else can teach anything.
run_step probe 30 5
gpu_line=$(sed -n 's/^gpu-run probe: gpu: //p' "$logs/probe.log" 2>/dev/null | tail -1)
if grep -q '^gpu-run probe: no GPU' "$logs/probe.log" 2>/dev/null; then
  gpu_line="no GPU: $(sed -n 's/^gpu-run probe: no GPU: //p' "$logs/probe.log" | tail -1)"
  for s in $steps; do
    [ "$s" = probe ] || record "$s" skipped - 0 "no GPU"
  done
  refresh_out
  write_summary "gpu-run: no GPU: nothing ran on a GPU"
  echo "gpu-run: $gpu_line; nothing ran on a GPU. Results in $OUT" | tee -a "$scratch/run.log"
  exit 3
fi
write_summary

run_step smoke 90 20
run_step gpu-tests 90 20
run_step tma 60 20
run_step corpus 150 30
run_step suite 170 40
run_step tune 200 90
run_step memory-bound 150 60
run_step kernel-bench 45 15
run_step sanitizer 90 20
run_step hf-check 60 20
run_step torch-compile 100 50

refresh_out
write_summary "gpu-run: done in $SECONDS s, $failures step(s) failed or timed out"
echo "gpu-run: done in $SECONDS s, $failures step(s) failed or timed out; results in $OUT" | tee -a "$scratch/run.log"
[ "$failures" -eq 0 ]
