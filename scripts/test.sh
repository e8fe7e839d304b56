#!/usr/bin/env bash
# Installs what is missing (with the packages only the tests use: install-deps.sh --test), builds,
# and runs every test under CTest (a run that executes no test fails: --no-tests=error), then the
# same suite again built with clang under AddressSanitizer and UndefinedBehaviorSanitizer, with the
# fuzz targets run briefly (scripts/sanitize.sh, docs/sanitizers.md).
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

scripts/install-deps.sh --test
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
# CTest shows a skipped test's name only: skip-reasons.py prints each one's reason after the run.
status=0
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs" --output-junit ctest-junit.xml || status=$?
! command -v python3 >/dev/null || scripts/skip-reasons.py build/ctest-junit.xml || true
[[ ${status} -eq 0 ]] || exit "${status}"
[[ ${release_only} -eq 1 ]] || scripts/sanitize.sh
