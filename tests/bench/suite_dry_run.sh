#!/bin/sh
# Compiles every entry of a suite tier through the pipeline and NVRTC (`tessera bench --dry-run`).
# usage: suite_dry_run.sh TESSERA SUITE TIER CACHE_DIR nvrtc|no-nvrtc
# Exit 77 (ctest: skipped) with the reason when the suite file is absent or NVRTC is not built in.
tessera=$1 suite=$2 tier=$3 cache=$4 nvrtc=$5
if [ ! -f "$suite" ]; then
  echo "skipped: $suite does not exist in this tree"
  exit 77
fi
if [ "$nvrtc" != nvrtc ]; then
  echo "skipped: this build has no NVRTC (CUDA toolkit not found), so the dry run cannot compile kernels"
  exit 77
fi
exec "$tessera" bench --suite "$suite" --tier "$tier" --dry-run --cache-dir "$cache"
