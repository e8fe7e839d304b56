#!/usr/bin/env bash
# The GPU bundle (scripts/bundle.sh) from this build: it assembles, every library of every binary
# resolves inside it or in the base system (bundle.sh checks with ldd and fails otherwise), and the
# bundled CLI compiles to CUDA with an empty environment from another directory, so it depends on
# nothing of this build tree. (Its gpu-run.sh is rehearsed by gpu_run_rehearsal.sh.)
# Usage: bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$source_dir/scripts/bundle.sh" "$work/bundle" "$build_dir" --kernel-cache none > "$work/bundle.log" 2>&1 || {
  cat "$work/bundle.log"; echo "FAIL: bundle.sh failed"; exit 1; }
grep -q "^bundle: $work/bundle (" "$work/bundle.log" || { cat "$work/bundle.log"; echo "FAIL: no size line"; exit 1; }
for f in bin/tessera bin/tessera_tests bin/tessera_kernel_bench lib/tessera/plugins/libcuda.so lib/tessera/plugins/libtorch_expr.so \
         share/tessera/devices.yaml share/tessera/cost_model.yaml share/tessera/pipelines/default.yaml share/tessera/build-info.txt gpu-run.sh \
         bench/suite.yaml bench/pytorch_baseline.py; do
  [ -e "$work/bundle/$f" ] || { echo "FAIL: $f is not in the bundle"; exit 1; }
done
# Nothing from the build tree: no RPATH/RUNPATH names it.
for f in "$work"/bundle/bin/* "$work"/bundle/lib/*.so* "$work"/bundle/lib/tessera/plugins/*.so; do
  if readelf -d "$f" 2>/dev/null | grep -i 'r.*path' | grep -q "$build_dir"; then
    echo "FAIL: ${f#$work/} has an RPATH into the build tree"; exit 1
  fi
done

cd "$work"
out=$(env -i PATH=/usr/bin:/bin "$work/bundle/bin/tessera" compile -c "nn.RMSNorm(256)(torch.randn(1,4,256))" --ir cuda --cache-dir "$work/cache" 2>&1) || {
  echo "$out"; echo "FAIL: the bundled CLI did not compile"; exit 1; }
echo "$out" | grep -q '__global__' || { echo "$out"; echo "FAIL: no CUDA source"; exit 1; }

grep -q '^glibc needed: GLIBC_' "$work/bundle/share/tessera/build-info.txt" || { cat "$work/bundle/share/tessera/build-info.txt"; echo "FAIL: build-info.txt"; exit 1; }
n=$(find "$work/bundle/corpus" -name '*.py' | wc -l)
[ "$n" -gt 50 ] || { echo "FAIL: corpus/ holds $n programs"; exit 1; }
[ ! -e "$work/bundle/kernel-cache" ] || { echo "FAIL: --kernel-cache none still made kernel-cache/"; exit 1; }
# gpu-run.sh's own usage errors.
set +e
out=$(env -i PATH=/usr/bin:/bin OUT="$work/o" "$work/bundle/gpu-run.sh" --steps bogus 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && echo "$out" | grep -q "unknown step 'bogus'" || { echo "$out"; echo "FAIL: --steps bogus (exit $rc)"; exit 1; }
set +e
out=$(env -i PATH=/usr/bin:/bin "$work/bundle/gpu-run.sh" 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && echo "$out" | grep -q "set OUT" || { echo "$out"; echo "FAIL: no OUT (exit $rc)"; exit 1; }
echo "PASS"
