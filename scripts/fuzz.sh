#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (tests/fuzz, docs/fuzzing.md) under ASan and UBSan.
#
#   scripts/fuzz.sh [--runs N] [--seconds S] [TARGET...]
#
# TARGET is one of torch_expr, pipeline_yaml, ir_json, ir_text, safetensors, hf_config (default:
# all). Each target runs N executions and at most S seconds, whichever ends first (only --seconds:
# no count limit; neither: 100000 executions), starting from its seed corpus
# (tests/fuzz/corpus/<target>) and its regressions (tests/fuzz/regressions/<target>). New
# interesting inputs go to build-sanitize/corpus/<target>, not
# into the source tree. Exits non-zero when any target finds a crash, hang, leak or undefined
# behaviour, after printing the path of the input that caused it (build-sanitize/findings/<target>/):
# add that file to tests/fuzz/regressions/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=""
seconds=""
targets=()
all_targets=(torch_expr pipeline_yaml ir_json ir_text safetensors hf_config)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " ${target} " ]]; then
    echo "fuzz.sh: unknown target '${target}' (one of: ${all_targets[*]})" >&2
    exit 2
  fi
done

# The fuzz targets live in the sanitizer build (CMake preset `sanitize`, shared with
# scripts/sanitize.sh): one clang build serves the ASan+UBSan test suite and the fuzzers.
build=build-sanitize
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
[[ -f ${build}/CMakeCache.txt ]] || cmake --preset sanitize
for target in "${targets[@]}"; do
  cmake --build ${build} --target "${target}_fuzz"
done

# Leaks and undefined behaviour are findings; a finding stops the target.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

mkdir -p ${build}/logs
# fuzz_one TARGET: runs one target, writes its one-line report (and a finding's details) to
# ${build}/logs/TARGET.report; exits non-zero on a finding.
fuzz_one() {
  local target=$1
  local work_corpus=${build}/corpus/${target} findings=${build}/findings/${target}
  local log=${build}/logs/${target}.log report=${build}/logs/${target}.report
  mkdir -p "${work_corpus}" "${findings}"
  local limits=()
  [[ -n ${runs} ]] && limits+=(-runs="${runs}")
  [[ -n ${seconds} ]] && limits+=(-max_total_time="${seconds}")
  [[ ${#limits[@]} -gt 0 ]] || limits=(-runs=100000)
  echo "== ${target}: ${limits[*]} (log: ${log})"
  local start status=0
  start=$(date +%s)
  ${build}/fuzz/${target}_fuzz "${limits[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="${findings}/" \
    "${work_corpus}" tests/fuzz/corpus/"${target}" tests/fuzz/regressions/"${target}" \
    > "${log}" 2>&1 || status=$?
  local elapsed=$(( $(date +%s) - start )) execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -1)
  if [[ ${status} -ne 0 ]]; then
    { echo "== ${target}: FINDING after ${execs:-?} executions, ${elapsed} s (exit ${status})"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "${log}" | head -5 || true
      sed -n 's/^.*Test unit written to \(.*\)$/   input: \1/p' "${log}"; } > "${report}"
    return 1
  fi
  echo "== ${target}: ${execs:-?} executions, ${elapsed} s, no finding" > "${report}"
}

# The targets run side by side, one per core (each libFuzzer process is single-threaded), and
# report in the order given.
jobs=$(nproc 2>/dev/null || echo 2)
for target in "${targets[@]}"; do rm -f "${build}/logs/${target}.report"; done
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge ${jobs} ]]; do wait -n || true; done
  fuzz_one "${target}" &
done
wait || true
failed=0
for target in "${targets[@]}"; do
  cat "${build}/logs/${target}.report"
  grep -q '^== .*: FINDING' "${build}/logs/${target}.report" && failed=1
done
exit ${failed}
