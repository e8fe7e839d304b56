#!/usr/bin/env bash
# The sanitizer half of the test command (scripts/test.sh runs it after the release suite):
# builds everything with clang under AddressSanitizer and UndefinedBehaviorSanitizer (CMake preset
# `sanitize`, ./build-sanitize; the same build carries libFuzzer's coverage instrumentation, so the
# fuzz targets come with it), runs the suite there with leak detection on (its gtest tests a suite
# per process, scripts/run-gtest-suites.sh; the other CTest tests through CTest), then runs each
# fuzz target for a bounded number of executions (scripts/fuzz.sh).
#
#   scripts/sanitize.sh [--fuzz-seconds S] [--all-tests]
#     --fuzz-seconds S   fuzz each target for at most 100000 executions and S seconds
#                        (default 20; 0: no fuzzing)
#
# A parameterized test's CTest name ends in its parameter's printout (`Name/Param  # GetParam() =
# ...`): its patterns end in `( |$)`, not `$`.
# Any sanitizer report fails the test that produced it: undefined behaviour aborts
# (-fno-sanitize-recover=all), ASan and LeakSanitizer exit non-zero (86, below); no report is
# suppressed.
# Nine groups run in the release half only: the tuner against exhaustive search over the op
# corpus (TunerCorpusTest: thousands of compiles), the tests whose work is NVRTC compiling every corpus
# kernel and suite entry (NvrtcCorpusTest, bench_suite_dry_run) — NVRTC is not instrumented, runs
# about 20x slower under ASan's allocator, and was half the sanitizer suite's time —,
# gpu_run_rehearsal, which times a shell script's steps against a deadline, gpu_bundle (the bundle
# holds the benchmark binaries, which the sanitizer build leaves out), and the shipped models'
# layer checks (HfCli.*LayerPassesItsCheckIn*: real-size layers simulated in three dtypes, 150 to
# 210 s each under ASan, through code the tiny models' tests cover), and the random-schedule
# reduction and softmax programs whose point is their size (2^20 and 2^24 elements, rows of
# 65,536 and 262,144: the code paths of their smaller siblings, 20 to 120 s each under ASan), and
# the acceptance checks of LLM-size schedules (the kernel report table of the suite and corpus, the
# block counts of the large reductions and the decode projection, the CLI's f16 softmax over rows
# of 262,144: compiles and simulations whose point is the size, 20 to 70 s each under ASan), and
# the second sampling of tests whose first runs here (the matmul programs' further and
# half-precision samples, the online-softmax rows' sampled unstaged schedules, the tiny models'
# half-precision CLI runs: the same code paths with other seeds and dtypes, 35 to 60 s of ASan time
# per family), and the heaviest instances of families whose other instances run here (the masked,
# logsumexp, RMSNorm and mean split-reduction programs, the masked online-softmax rows, the
# staged-cone, bmm and odd-size matmul programs, the pinned TMA schedules: 15 to 36 s each under
# ASan) and the parsers' robustness sweeps that the fuzz targets run under the same sanitizers
# (damaged printouts, malformed programs), and the shared-kernel check of a model's identical
# layers (docs/sanitizers.md); `--all-tests` runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_seconds=20
all_tests=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
    --all-tests) all_tests=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sanitize.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
jobs=$(nproc 2>/dev/null || echo 2)
[[ -f build-sanitize/CMakeCache.txt ]] || cmake --preset sanitize
cmake --build build-sanitize -j "${jobs}"

# intercept_tls_get_addr=0: ASan's tracking of dynamic TLS misreads a block of one of the
# dlopen'd libraries (the stand-in driver run of FakeDriverTest.LargeConstantsUploadWindowByWindow
# reports "DTLS 5 at 0x2eca-0x800003fcc") and LeakSanitizer's tracer then dies with SIGSEGV at exit
# after the run succeeded. Without the interception, dynamic TLS is not scanned for pointers; no
# leak report appears with it off, so nothing relies on it.
# exitcode=86: a process stopped by a report (ASan, LeakSanitizer, UBSan) exits 86, a code no
# tessera command uses (0, 1, 2), so a test expecting a failing command's exit 1 cannot pass on a
# sanitizer report; the CLI tests' runner fails any child that exits 86 (kSanitizerExitCode in
# tests/support/cli_runner.h).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
# The tests left to the release half (the comment at the top): a CTest regex of their names.
exclude='^$'  # --all-tests: none (no test has an empty name)
[[ ${all_tests} -eq 1 ]] ||
  exclude='^(Corpus/NvrtcCorpusTest\.|TunerCorpusTest\.|bench_suite_dry_run$|gpu_run_rehearsal$|gpu_bundle$|slurm_tune$|HfCli\.(ShippedModel|TinyLlama)LayerPassesItsCheckIn|Reductions/SplitReduceProgramTest\..*/(WholeTensorSum2e2[04]|Softmax262144)|Rows/OnlineSoftmaxProgramTest\..*/LogSoftmaxRowsOf65536|KernelReportTableTest\.|SplitReduceTest\.LargeReductionsFillEverySm$|MatmulScheduleTest\.DecodeProjectionFillsEverySm$|Cli\.RunChecksALongHalfPrecisionSoftmaxAtItsPrecision$|Matmuls/MatmulScheduleProgramTest\.(MoreSampledSchedules|HalfPrecisionSchedules)MatchReference/|Rows/OnlineSoftmaxProgramTest\.SampledRowsReadFromMemoryMatchReference/|HfCli\.TinyModelsPassTheirCheckInHalfPrecision$|Reductions/SplitReduceProgramTest\..*/(MaskedSoftmax|Logsumexp|RmsNormFewRows|MeanEpilogue)( |$)|Rows/OnlineSoftmaxProgramTest\.SampledSchedulesMatchReference/Masked|Matmuls/MatmulScheduleProgramTest\.SampledSchedulesMatchReference/(StagedConeDownProjection|Bmm|OddSizes)( |$)|TmaScheduleTest\.PinnedTmaSchedulesMatchTheReferenceInEveryDtype$|IrRoundTrip\.TruncatedAndDamagedPrintoutsFailCleanly$|TorchExprTest\.MalformedProgramsNeverCrash$|HfModelsTest\.IdenticalLayersShareTheirKernels$|HfModelsTest\.(ThreeDecodeStepsEqualThePrefillAtTheSamePositions|ALargeCheckpointCompilesWithoutReadingItsWeights)$|TuneCli\.AModelTunesEachDistinctKernelOnce$|ValuePassCoverageTest\.CorpusProgramsExerciseHoistingAndSubexpressionElimination$|MatmulScheduleTest\.SampledSchedulesSplitChunkPipelineAndTileInTwoDimensions$|KernelAbiTest\.RmsNormOver16384ColumnsStagesTheRowInDynamicSharedMemory$|DecoderBlocksTest\.CompilesToCudaSourceTheSameForAnyThreadCount$|RegisterTileTest\.MatmulSharesTheRowOperandAndReplicatesTheColumns$)'
status=0
# The gtest tests run a suite per process (scripts/run-gtest-suites.sh; under ASan a process start
# costs about 0.2 s of CPU, which run per test was half the suite's time); CTest runs the others
# (scripts, whose names hold no dot).
scripts/run-gtest-suites.sh build-sanitize "${exclude}" "${jobs}" || status=$?
ctest --test-dir build-sanitize --output-on-failure --no-tests=error -j "${jobs}" -E "\\.|${exclude}" \
  --output-junit ctest-junit.xml || status=$?
! command -v python3 >/dev/null || scripts/skip-reasons.py build-sanitize/ctest-junit.xml || true
[[ ${status} -eq 0 ]] || exit "${status}"

if [[ ${fuzz_seconds} -gt 0 ]]; then
  scripts/fuzz.sh --runs 100000 --seconds "${fuzz_seconds}"
fi
