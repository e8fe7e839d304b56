#!/usr/bin/env bash
# The ABI test of the plugin system (CTest `out_of_tree_plugin`): install the build tree to a
# scratch prefix, build examples/out_of_tree_pass against that installation with
# find_package(Tessera), and check that the installed `tessera plugins --plugin <it>` lists its
# pass exactly like a built-in one; check the install carries every program the build made
# (tessera_kernel_bench too); then build the example again against the build tree itself (its
# package in <build>/cmake, never installed) and list it with the build's CLI.
#
# usage: out_of_tree_test.sh <cmake> <build-dir> <example-source-dir> [generator]
set -euo pipefail

cmake_bin=$1
build_dir=$2
example_dir=$3
generator=${4:-Ninja}
expected_pass=strip_knob_choices

scratch=$(mktemp -d "${TMPDIR:-/tmp}/tessera_out_of_tree.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix

step() { echo "--- $*"; }

step "installing $build_dir to $prefix"
"$cmake_bin" --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" 2>&1 || {
  cat "$scratch/install.log"; echo "FAIL: cmake --install failed"; exit 1; }

step "configuring the example against the installed package"
"$cmake_bin" -S "$example_dir" -B "$scratch/build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure.log" 2>&1 || {
  cat "$scratch/configure.log"; echo "FAIL: configuring the out-of-tree example failed"; exit 1; }

step "building the example"
"$cmake_bin" --build "$scratch/build" >"$scratch/build.log" 2>&1 || {
  cat "$scratch/build.log"; echo "FAIL: building the out-of-tree example failed"; exit 1; }

plugin=$(find "$scratch/build" -name 'libhello_pass.so' -print -quit)
if [[ -z "$plugin" ]]; then
  echo "FAIL: the build produced no libhello_pass.so"; exit 1
fi

step "listing plugins with the installed CLI"
set +e
listing=$("$prefix/bin/tessera" plugins --plugin "$plugin" 2>&1)
status=$?
set -e
echo "$listing"
if [[ $status -ne 0 ]]; then
  echo "FAIL: 'tessera plugins --plugin $plugin' exited with $status"; exit 1
fi
if ! grep -q -- "$expected_pass" <<<"$listing"; then
  echo "FAIL: the listing does not mention the out-of-tree pass '$expected_pass'"; exit 1
fi
# The installed plugin directory must be found too: the install tree works like the build tree.
if ! grep -q -- "canonicalize" <<<"$listing"; then
  echo "FAIL: the listing does not mention the installed built-in pass 'canonicalize'"; exit 1
fi
echo "PASS: the out-of-tree pass '$expected_pass' is listed by the installed CLI"

step "checking the install carries the build's programs"
for program in tessera tessera_kernel_bench; do
  if [[ -x "$build_dir/bin/$program" && ! -x "$prefix/bin/$program" ]]; then
    echo "FAIL: the build has bin/$program but cmake --install did not install it"; exit 1
  fi
done

step "configuring the example against the build tree (never installed)"
"$cmake_bin" -S "$example_dir" -B "$scratch/build-tree" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$build_dir" >"$scratch/configure-tree.log" 2>&1 || {
  cat "$scratch/configure-tree.log"; echo "FAIL: configuring the example against the build tree failed"; exit 1; }
"$cmake_bin" --build "$scratch/build-tree" >"$scratch/build-tree.log" 2>&1 || {
  cat "$scratch/build-tree.log"; echo "FAIL: building the example against the build tree failed"; exit 1; }
plugin=$(find "$scratch/build-tree" -name 'libhello_pass.so' -print -quit)
[[ -n "$plugin" ]] || { echo "FAIL: the build-tree build produced no libhello_pass.so"; exit 1; }
set +e
listing=$("$build_dir/bin/tessera" plugins --plugin "$plugin" 2>&1)
status=$?
set -e
if [[ $status -ne 0 ]] || ! grep -q -- "$expected_pass" <<<"$listing"; then
  echo "$listing"; echo "FAIL: the build's CLI does not list the pass built against the build tree"; exit 1
fi
echo "PASS: find_package(Tessera) works against the build tree too"
