#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, skipping those already present.
# The CUDA toolkit is not a Debian package here: it is expected at /usr/local/cuda (NVRTC is used when
# present; the build works without it).
#
#   scripts/install-deps.sh          what building and running Tessera needs
#   scripts/install-deps.sh --test   also what only the tests use: Slurm and munge, for the sharded
#                                    tuning test (tests/e2e/slurm_tune_test.sh), which starts its own
#                                    single-node Slurm and munged from a temporary directory and reads
#                                    no configuration of theirs from /etc. On a machine with systemd,
#                                    Debian's packages enable their services on install (munged starts
#                                    with a generated key; slurmctld and slurmd fail without an
#                                    /etc/slurm/slurm.conf); the test uses none of them.
set -euo pipefail

with_test_packages=0
case "${1:-}" in
  "") ;;
  --test) with_test_packages=1 ;;
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1'" >&2; exit 2 ;;
esac

packages=(
  g++ clang libclang-rt-dev llvm cmake ninja-build ccache pkg-config
  libboost-dev libboost-program-options-dev
  libyaml-cpp-dev nlohmann-json3-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_packages=(slurm-wlm munge)
[[ ${with_test_packages} -eq 0 ]] || packages+=("${test_packages[@]}")

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
  if ! command -v sudo >/dev/null; then
    # Without the test-only packages the tests that need them report themselves skipped.
    build_missing=()
    for p in "${missing[@]}"; do
      [[ " ${test_packages[*]} " == *" $p "* ]] || build_missing+=("$p")
    done
    if [ ${#build_missing[@]} -eq 0 ]; then
      echo "install-deps: need root (or sudo) to install ${missing[*]}; the tests that use them will be skipped" >&2
      exit 0
    fi
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
