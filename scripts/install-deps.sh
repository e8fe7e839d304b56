#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, skipping those already present.
# The CUDA toolkit is not a Debian package here: it is expected at /usr/local/cuda (NVRTC is used when
# present; the build works without it).
set -euo pipefail

packages=(
  g++ clang libclang-rt-dev llvm cmake ninja-build ccache pkg-config
  libboost-dev libboost-program-options-dev
  libyaml-cpp-dev nlohmann-json3-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
