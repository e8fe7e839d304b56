#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test under CTest (a run that executes no test
# fails: --no-tests=error), then the same suite again built with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer, with the fuzz targets run briefly (scripts/sanitize.sh,
# docs/sanitizers.md).
#
#   scripts/test.sh                  release suite, then the sanitizer suite and fuzzing
#   scripts/test.sh --release-only   release suite only (for quick local iteration)
set -euo pipefail
cd "$(dirname "$0")/.."

release_only=0
case "${1:-}" in
  "") ;;
  --release-only) release_only=1 ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown option '$1'" >&2; exit 2 ;;
esac

scripts/install-deps.sh
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"
[[ ${release_only} -eq 1 ]] || scripts/sanitize.sh
