// The statistics of `tessera ab --bench`: two sets of whole-program latencies, measured in
// interleaved pairs (A, B, A, B, ...), compared by the ratio of their medians with a bootstrap
// confidence interval. Pure functions (no GPU, no clock), unit-tested in tests/unit/ab_stats_test.cpp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/support/status.h"

namespace tessera::cli {

enum class AbVerdict { AFaster, BFaster, NoDifference };
// "A faster", "B faster", "no difference".
std::string_view ab_verdict_text(AbVerdict v);

struct BootstrapOptions {
  int resamples = 10000;
  uint64_t seed = 1;      // fixed: the same samples always give the same interval
  double level = 0.95;    // of the two-sided interval
};

struct AbComparison {
  int runs = 0;             // pairs of runs
  double median_a = 0;      // in the samples' unit
  double median_b = 0;
  double ratio = 0;         // median_b / median_a: below 1 means B takes less time
  double ci_low = 0;        // the percentile interval of the bootstrapped ratio
  double ci_high = 0;
  AbVerdict verdict = AbVerdict::NoDifference;  // no difference when the interval contains 1
};

// The median (the mean of the two middle values for an even count); 0 for no values.
double median_of(std::vector<double> values);

// Compares latencies `a[i]`, `b[i]` of run pair i. The bootstrap resamples the pairs with
// replacement (so a drift that slows both sides alike stays paired), takes the ratio of the
// medians of each resample, and reports the (1 - level) / 2 and (1 + level) / 2 quantiles (linear
// interpolation between order statistics). Deterministic for a given seed: indices are drawn with
// std::mt19937_64 reduced modulo the run count. Errors: no runs, sizes that differ, a value that is
// not a positive finite number, fewer than 1 resample, a level outside (0, 1).
Expected<AbComparison> compare_latencies(const std::vector<double>& a, const std::vector<double>& b,
                                         const BootstrapOptions& options = {});

}  // namespace tessera::cli
