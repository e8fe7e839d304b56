#!/usr/bin/env bash
# Usage: scripts/bundle.sh OUTDIR [BUILD_DIR] [--kernel-cache ARCH|none]
#
# Builds (if needed) and assembles a self-contained Tessera for a bare GPU machine that has a CUDA
# driver, a CUDA installation (for NVRTC) and Python with PyTorch, but no package manager and no
# compiler: the install tree (bin/tessera, lib/libtessera.so, lib/tessera/plugins, share/tessera
# with the device table, pipelines and build-info.txt), the test binary for the GPU tests, bench/
# (the suite and its scripts), corpus/ (the op corpus, one program per file), gpu-run.sh, and
# every shared library they need that is not part of the base system (glibc, libstdc++, libgcc) or
# of the CUDA installation (libcuda, libnvrtc), with RPATHs relative to $ORIGIN. With NVRTC here it
# also fills kernel-cache/ with every kernel gpu-run.sh compiles, built for ARCH (default sm_90,
# the H100's and H200's; `none` leaves it out): the GPU machine then runs them without NVRTC when
# its NVRTC is the same version. Ends by listing the bundle's size and checking with ldd that every
# library is found inside it or in the base system.
set -euo pipefail

usage="usage: scripts/bundle.sh OUTDIR [BUILD_DIR] [--kernel-cache ARCH|none]"
cache_arch=sm_90
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel-cache) cache_arch=${2:?$usage}; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [ ${#positional[@]} -lt 1 ] || [ ${#positional[@]} -gt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=${positional[0]}
build=${positional[1]:-$root/build}
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
cp "$root/scripts/gpu-run.sh" "$out/gpu-run.sh"
chmod +x "$out/gpu-run.sh"
"$build/bin/tessera_corpus_json" --files "$out/corpus"

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

# What the GPU machine's probe compares with its own: this build, the glibc its binaries need, and
# the toolkit NVRTC came from.
{
  echo "tessera $(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt"), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'no git'), bundled $(date -u +%Y-%m-%d)"
  cat "$out/share/tessera/cuda-build-info.txt" 2>/dev/null
  echo "glibc needed: $(find "$out" -type f \( -perm -u+x -o -name '*.so*' \) -exec objdump -T {} + 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
} > "$out/share/tessera/build-info.txt"

# The kernel cache: every kernel gpu-run.sh builds (its own programs, the corpus, the suite entries
# it runs), compiled here for $cache_arch, several processes at a time into one cache directory
# (entries are written atomically).
if [ "$cache_arch" != none ] && grep -q '^nvrtc: ' "$out/share/tessera/build-info.txt"; then
  cache="$out/kernel-cache"
  mkdir -p "$cache"
  jobs=$(nproc 2>/dev/null || echo 2)
  echo "bundle: filling kernel-cache/ for $cache_arch (NVRTC)..."
  programs=$(mktemp -d)
  i=0
  while IFS= read -r p; do i=$((i + 1)); printf '%s\n' "$p" > "$programs/gpu-run-$i.py"; done < <("$out/gpu-run.sh" --list-programs)
  find "$programs" "$out/corpus" -name '*.py' -print0 | sort -z |
    xargs -0 -P "$jobs" -I{} sh -c 'exec "$1" compile --ir cuda -v --arch "$2" --cache-dir "$3" -c "$(cat "$4")"' _ \
      "$out/bin/tessera" "$cache_arch" "$cache" {} > /dev/null 2> "$out/kernel-cache.log" ||
    { tail -20 "$out/kernel-cache.log" >&2; rm -rf "$programs"; echo "error: filling the kernel cache failed" >&2; exit 1; }
  rm -rf "$programs"
  "$out/bin/tessera" bench --dry-run --suite "$out/bench/suite.yaml" --tier quick --entries "$("$out/gpu-run.sh" --list-entries)" \
    --arch "$cache_arch" --cache-dir "$cache" > /dev/null 2>> "$out/kernel-cache.log" ||
    { tail -20 "$out/kernel-cache.log" >&2; echo "error: filling the kernel cache failed" >&2; exit 1; }
  rm -f "$out/kernel-cache.log"
  echo "kernel cache arch: $cache_arch" >> "$out/share/tessera/build-info.txt"
  echo "bundle: kernel-cache/ holds $(find "$cache" -name '*.cubin' | wc -l) kernels for $cache_arch"
fi

echo "bundle: $out ($(du -sh "$out" | cut -f1))"
# Every file, except the kernel cache and the corpus programs: one line each for those.
( cd "$out" && find . -type f -not -path './kernel-cache/*' -not -path './corpus/*' -printf '%s\t%p\n' | sort -k2 |
    awk -F'\t' '{ printf "  %8.1f KiB  %s\n", $1 / 1024, $2 }'
  for d in corpus kernel-cache; do
    if [ -d "$d" ]; then printf '  %8.1f KiB  ./%s/ (%d files)\n' "$(du -sk "$d" | cut -f1)" "$d" "$(find "$d" -type f | wc -l)"; fi
  done )
