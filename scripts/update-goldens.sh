#!/usr/bin/env bash
# Regenerates every golden file from the current build: the pass goldens' `#### expected`
# sections (their `#### input` sections are reprinted in the current printed form, `#### check`
# sections are left as written) and the IR printer goldens. Review the resulting `git diff` like
# code before committing; tests/golden/pass_golden_test.cpp describes the golden format.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build
TESSERA_UPDATE_GOLDENS=1 build/bin/tessera_tests --gtest_filter='Goldens/*:*Golden*' || true
git diff --stat -- tests/golden
