#!/usr/bin/env bash
# Regenerates every golden file from the current build (pass goldens and IR printer goldens).
# Review the resulting `git diff` like code before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build
TESSERA_UPDATE_GOLDENS=1 build/tests/tessera_tests --gtest_filter='Goldens/*:*Golden*' || true
git diff --stat -- tests/golden
