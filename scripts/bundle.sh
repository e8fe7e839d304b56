#!/usr/bin/env bash
# Usage: scripts/bundle.sh OUTDIR [BUILD_DIR]
#
# Builds (if needed) and assembles a self-contained Tessera for a bare GPU machine that has a CUDA
# driver, a CUDA installation (for NVRTC) and Python with PyTorch, but no package manager and no
# compiler: the install tree (bin/tessera, lib/libtessera.so, lib/tessera/plugins, share/tessera
# with the device table and pipelines), the test binary for the GPU tests, bench/ (the suite and
# its scripts), gpu-check.sh, and every shared library they need that is not part of the base
# system (glibc, libstdc++, libgcc) or of the CUDA installation (libcuda, libnvrtc), with RPATHs
# relative to $ORIGIN. Ends by listing the bundle's size and checking with ldd that every library
# is found inside it or in the base system.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/bundle.sh OUTDIR [BUILD_DIR]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
build=${2:-$root/build}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "error: $build is not a configured build tree; run scripts/build.sh first" >&2
  exit 1
fi
grep -q '^CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" ||
  echo "warning: $build is not a Release build; the bundle's timings will not be representative" >&2

cmake --build "$build"

rm -rf "$out"
mkdir -p "$out"
cmake --install "$build" --prefix "$out" --strip >/dev/null
cmake --install "$build" --prefix "$out" --strip --component gpu_tests >/dev/null
# Development files (headers, the CMake package) are for plugin authors, not for running.
rm -rf "$out/include" "$out/lib/cmake"

mkdir -p "$out/bench"
for f in "$root"/bench/*.yaml "$root"/bench/*.py "$root"/bench/README.md; do
  [ -f "$f" ] && cp "$f" "$out/bench/"
done
cp "$root/scripts/gpu-check.sh" "$out/gpu-check.sh"
chmod +x "$out/gpu-check.sh"

elf_files() {
  find "$out" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
    while IFS= read -r -d '' f; do
      head -c 4 "$f" 2>/dev/null | grep -q 'ELF' && printf '%s\n' "$f"
    done
}

# Libraries the target machine provides: the C runtime and the compiler's runtime (base system),
# and the CUDA driver and NVRTC (its CUDA installation, found through the plugin's RPATH).
is_provided() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*) return 0 ;;
    libresolv.so.*|libutil.so.*|libstdc++.so.*|libgcc_s.so.*) return 0 ;;
    libcuda.so.*|libnvrtc.so.*|libnvrtc-builtins.so.*) return 0 ;;
  esac
  return 1
}

# Copy every other library ldd resolves outside the bundle into lib/, until nothing new appears
# (the copies' own dependencies included).
while :; do
  copied=0
  while IFS= read -r f; do
    while read -r name _ path _; do
      is_provided "$name" && continue
      case "$path" in "$out"/*|"") continue ;; esac
      [ -e "$out/lib/$name" ] && continue
      cp -L "$path" "$out/lib/$name"
      chmod u+w "$out/lib/$name"
      strip --strip-unneeded "$out/lib/$name" 2>/dev/null || true
      copied=1
    done < <(ldd "$f" 2>/dev/null | grep '=>' || true)
  done < <(elf_files)
  [ $copied -eq 0 ] && break
done

# A copied library has no RPATH, so it could not find another copied library on the target
# machine (RUNPATH is not inherited); none of today's do, and this check keeps it that way.
status=0
for lib in "$out"/lib/*.so*; do
  [ -f "$lib" ] || continue
  case "$(basename "$lib")" in libtessera.so*) continue ;; esac
  for needed in $(readelf -d "$lib" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if [ -e "$out/lib/$needed" ] && ! readelf -d "$lib" | grep -q 'R.*PATH'; then
      echo "error: bundled $(basename "$lib") needs bundled $needed but has no RPATH" >&2
      status=1
    fi
  done
done

# Every library of every binary must resolve inside the bundle or in the base system (NVRTC may
# be missing here only if this machine has no CUDA installation; then it is reported, not fatal).
while IFS= read -r f; do
  while read -r name _ path _; do
    [ "$path" = "not" ] || continue
    case "$name" in
      libnvrtc.so.*) echo "note: ${f#$out/} needs $name from the target machine's CUDA installation" >&2 ;;
      *) echo "error: ${f#$out/}: $name not found" >&2; status=1 ;;
    esac
  done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>/dev/null | grep '=>' || true)
done < <(elf_files)
[ $status -eq 0 ] || exit $status

echo "bundle: $out ($(du -sh "$out" | cut -f1))"
( cd "$out" && find . -type f -printf '%s\t%p\n' | sort -k2 | awk -F'\t' '{ printf "  %8.1f KiB  %s\n", $1 / 1024, $2 }' )
