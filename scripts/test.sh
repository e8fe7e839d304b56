#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test under CTest. A run that executes no test
# fails (--no-tests=error).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"
