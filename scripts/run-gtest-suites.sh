#!/usr/bin/env bash
# Runs the GoogleTest tests CTest would run in a build tree, one process per gtest suite rather
# than one per test, JOBS suites at a time (scripts/sanitize.sh; docs/build-time.md: under the
# sanitizers a process start costs about 0.2 s of CPU, which per test was half the suite's time).
#
#   scripts/run-gtest-suites.sh BUILD_DIR EXCLUDE_REGEX JOBS
#
# The tests are exactly the gtest tests among those `ctest -N -E EXCLUDE_REGEX` lists (CTest's other
# tests are scripts, whose names hold no dot: left to CTest). Each suite runs in BUILD_DIR/tests
# (CTest's working directory for them) under a 20-minute limit, its output in
# BUILD_DIR/gtest-logs/<suite>.log. Prints each failing suite with the end of its log, each
# skipped test with its reason, and a summary; exits 1 when a suite fails (or no test was found).
set -uo pipefail
if [[ $# -ne 3 ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build=$(cd "$1" && pwd)
exclude=$2
jobs=$3
logs=$build/gtest-logs
rm -rf "${logs}" && mkdir -p "${logs}"

# The CTest names of the tests it would run, and each gtest test's CTest name with its gtest filter
# (gtest_discover_tests' script: `add_test([=[NAME]=]  BIN [==[--gtest_filter=FULL_NAME]==] ...)`;
# a value-parameterized test's CTest name shows its parameter, the filter its index). Then
# suite <TAB> full name, the suites with the most tests first.
ctest --test-dir "${build}" -N -E "${exclude}" | sed -n 's/^ *Test *#[0-9]*: //p' > "${logs}/allowed.txt"
awk '/^add_test\(\[=\[/ {
       s = index($0, "[=[") + 3; e = index($0, "]=]"); f = index($0, "[==[--gtest_filter=")
       if (f == 0) next
       rest = substr($0, f + 19)
       print substr($0, s, e - s) "\t" substr(rest, 1, index(rest, "]==]") - 1)
     }' "${build}"/tests/tessera_tests*_tests.cmake > "${logs}/names.tsv"
awk -F '\t' 'NR == FNR { allowed[$0] = 1; next } ($1 in allowed) { print $2 }' "${logs}/allowed.txt" "${logs}/names.tsv" \
  > "${logs}/tests.txt"
if [[ ! -s ${logs}/tests.txt ]]; then
  echo "run-gtest-suites.sh: CTest lists no gtest test in ${build}" >&2
  exit 1
fi
awk '{ i = index($0, "."); print substr($0, 1, i - 1) "\t" $0 }' "${logs}/tests.txt" > "${logs}/by_suite.txt"
cut -f1 "${logs}/by_suite.txt" | sort | uniq -c | sort -k1,1rn -k2 | awk '{ print $2 }' > "${logs}/suites.txt"

# run_suite SUITE BUILD LOGS: one gtest process for the suite's listed tests.
run_suite() {
  local suite=$1 build=$2 logs=$3
  local log=${logs}/${suite//\//_}.log filter start=$SECONDS rc=0
  filter=$(awk -F '\t' -v s="${suite}" '$1 == s { print $2 }' "${logs}/by_suite.txt" | paste -sd: -)
  (cd "${build}/tests" && timeout 1200 "${build}/bin/tessera_tests" --gtest_filter="${filter}" > "${log}" 2>&1) || rc=$?
  echo "${rc} $((SECONDS - start)) ${suite}" >> "${logs}/results.txt"
}
export -f run_suite
xargs -P "${jobs}" -I{} bash -c 'run_suite "$@"' _ {} "${build}" "${logs}" < "${logs}/suites.txt"

failed=0
while read -r rc secs suite; do
  [[ ${rc} -eq 0 ]] && continue
  failed=$((failed + 1))
  echo "FAILED: ${suite} (exit ${rc}$([[ ${rc} -eq 124 ]] && echo ": its 20-minute limit"), ${secs} s); the end of ${logs}/${suite//\//_}.log:"
  tail -n 60 "${logs}/${suite//\//_}.log"
done < "${logs}/results.txt"
# Skipped tests with their reasons: the lines between gtest's "Skipped" and "[  SKIPPED ]".
cat "${logs}"/*.log | awk '
  /: Skipped$/ { reason = ""; collecting = 1; next }
  /^\[  SKIPPED \] / && collecting { sub(/ \([0-9]+ ms\)$/, ""); print "skipped " $4 ": " reason; collecting = 0; next }
  collecting { reason = reason (reason == "" ? "" : " ") $0 }
' | sort -u
ran=$(wc -l < "${logs}/tests.txt")
echo "run-gtest-suites.sh: ${ran} tests in $(wc -l < "${logs}/suites.txt") suites, ${failed} suite(s) failed"
[[ ${failed} -eq 0 ]]
