// The statistics of `tessera ab --bench` (see ab_stats.h): ratio of medians, paired percentile
// bootstrap, verdict. Tests: tests/unit/ab_stats_test.cpp.
#include "ab_stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace tessera::cli {

std::string_view ab_verdict_text(AbVerdict v) {
  switch (v) {
    case AbVerdict::AFaster: return "A faster";
    case AbVerdict::BFaster: return "B faster";
    case AbVerdict::NoDifference: return "no difference";
  }
  return "no difference";
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t n = values.size();
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (n % 2) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(values.begin(), mid);
  return (lower + upper) / 2;
}

namespace {

// Linear interpolation between the order statistics of sorted `v` (q in [0, 1]).
double quantile_sorted(const std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

}  // namespace

Expected<AbComparison> compare_latencies(const std::vector<double>& a, const std::vector<double>& b,
                                         const BootstrapOptions& options) {
  if (a.empty()) return make_error("no timed runs to compare");
  if (a.size() != b.size())
    return make_error("the two sides have different run counts (" + std::to_string(a.size()) + " and " +
                      std::to_string(b.size()) + ")");
  for (const std::vector<double>* side : {&a, &b})
    for (double v : *side)
      if (!(std::isfinite(v) && v > 0))
        return make_error("a latency is not a positive finite number (" + std::to_string(v) + ")");
  if (options.resamples < 1) return make_error("the bootstrap needs at least one resample");
  if (!(options.level > 0 && options.level < 1)) return make_error("the confidence level must be in (0, 1)");

  AbComparison c;
  c.runs = static_cast<int>(a.size());
  c.median_a = median_of(a);
  c.median_b = median_of(b);
  c.ratio = c.median_b / c.median_a;

  const size_t n = a.size();
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios, ra(n), rb(n);
  ratios.reserve(static_cast<size_t>(options.resamples));
  for (int r = 0; r < options.resamples; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const size_t pick = static_cast<size_t>(rng() % n);
      ra[i] = a[pick];
      rb[i] = b[pick];
    }
    ratios.push_back(median_of(rb) / median_of(ra));
  }
  std::sort(ratios.begin(), ratios.end());
  c.ci_low = quantile_sorted(ratios, (1 - options.level) / 2);
  c.ci_high = quantile_sorted(ratios, (1 + options.level) / 2);
  if (c.ci_high < 1)
    c.verdict = AbVerdict::BFaster;
  else if (c.ci_low > 1)
    c.verdict = AbVerdict::AFaster;
  else
    c.verdict = AbVerdict::NoDifference;
  return c;
}

}  // namespace tessera::cli
