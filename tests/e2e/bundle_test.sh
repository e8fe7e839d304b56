#!/usr/bin/env bash
# The GPU bundle (scripts/bundle.sh) from this build: it assembles, every library of every binary
# resolves inside it or in the base system (bundle.sh checks with ldd and fails otherwise), and the
# bundled CLI compiles to CUDA with an empty environment from another directory, so it depends on
# nothing of this build tree. Its GPU tests and gpu-check.sh run, and say that no GPU is usable.
# Usage: bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$source_dir/scripts/bundle.sh" "$work/bundle" "$build_dir" > "$work/bundle.log" 2>&1 || {
  cat "$work/bundle.log"; echo "FAIL: bundle.sh failed"; exit 1; }
grep -q "^bundle: $work/bundle (" "$work/bundle.log" || { cat "$work/bundle.log"; echo "FAIL: no size line"; exit 1; }
for f in bin/tessera bin/tessera_tests bin/tessera_kernel_bench lib/tessera/plugins/libcuda.so lib/tessera/plugins/libtorch_expr.so \
         share/tessera/devices.yaml share/tessera/pipelines/default.yaml gpu-check.sh; do
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

# Without a GPU, gpu-check.sh fails and says why (skips are failures there, not passes).
set +e
env -i PATH=/usr/bin:/bin "$work/bundle/gpu-check.sh" "$work/results" > "$work/check.log" 2>&1
rc=$?
set -e
if [ "$rc" -eq 0 ]; then
  if grep -q "smoke: exit 0" "$work/check.log"; then echo "PASS (a GPU is present: gpu-check passed)"; exit 0; fi
  cat "$work/check.log"; echo "FAIL: gpu-check.sh passed without a GPU"; exit 1
fi
grep -q "gpu-tests (skipped tests)" "$work/check.log" || { cat "$work/check.log"; echo "FAIL: skips not reported"; exit 1; }
[ -f "$work/results/machine.txt" ] || { echo "FAIL: no machine.txt"; exit 1; }
# --only runs the named steps and nothing else; an unknown step is a usage error.
set +e
env -i PATH=/usr/bin:/bin "$work/bundle/gpu-check.sh" "$work/only" --only smoke > "$work/only.log" 2>&1
set -e
if grep -q "== gpu-tests" "$work/only.log" || ! grep -q "== smoke" "$work/only.log"; then
  cat "$work/only.log"; echo "FAIL: --only smoke did not run exactly the smoke step"; exit 1
fi
set +e
env -i PATH=/usr/bin:/bin "$work/bundle/gpu-check.sh" "$work/only" --only bogus > "$work/bogus.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "unknown step 'bogus'" "$work/bogus.log" || { cat "$work/bogus.log"; echo "FAIL: --only bogus (exit $rc)"; exit 1; }
echo "PASS"
