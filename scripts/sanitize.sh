#!/usr/bin/env bash
# The sanitizer half of the test command (scripts/test.sh runs it after the release suite):
# builds everything with clang under AddressSanitizer and UndefinedBehaviorSanitizer (CMake preset
# `sanitize`, ./build-sanitize; the same build carries libFuzzer's coverage instrumentation, so the
# fuzz targets come with it), runs the whole CTest suite there with leak detection on, then runs
# each fuzz target for a bounded number of executions (scripts/fuzz.sh).
#
#   scripts/sanitize.sh [--fuzz-seconds S]   fuzz each target for at most 100000 executions and
#                                            S seconds (default 60; 0: no fuzzing)
#
# Any sanitizer report fails the test that produced it: undefined behaviour aborts
# (-fno-sanitize-recover=all), ASan and LeakSanitizer exit non-zero. Leak reports are not
# suppressed (tests/sanitizer/lsan.supp lists what is, with the reason for each entry).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_seconds=60
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sanitize.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
jobs=$(nproc 2>/dev/null || echo 2)
[[ -f build-sanitize/CMakeCache.txt ]] || cmake --preset sanitize
cmake --build build-sanitize -j "${jobs}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:suppressions=$(pwd)/tests/sanitizer/asan.supp"
export LSAN_OPTIONS="suppressions=$(pwd)/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-sanitize --output-on-failure --no-tests=error -j "${jobs}"

if [[ ${fuzz_seconds} -gt 0 ]]; then
  scripts/fuzz.sh --runs 100000 --seconds "${fuzz_seconds}"
fi
