#!/usr/bin/env bash
# Quick start: install what is missing, build, and compile RMSNorm to the furthest IR stage.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/bin/tessera compile -c "nn.RMSNorm(2048)(torch.randn(1,32,2048))"
