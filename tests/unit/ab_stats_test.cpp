// `tessera ab --bench` statistics (framework/cli/ab_stats.cpp) on synthetic latencies: the
// interval brackets the true ratio of medians, the verdicts follow the interval, the result is
// deterministic, and bad samples are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "framework/cli/ab_stats.h"

namespace tessera::cli {
namespace {

// `n` latencies around `median_us` with multiplicative log-normal noise of `sigma` (the median of
// the distribution is exactly median_us), from a seeded generator.
std::vector<double> latencies(size_t n, double median_us, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) v.push_back(median_us * std::exp(noise(rng)));
  return v;
}

TEST(AbStatsTest, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median_of({}), 0);
}

TEST(AbStatsTest, ClearlyFasterBIsBFaster) {
  const auto a = latencies(200, 100.0, 0.02, 1), b = latencies(200, 80.0, 0.02, 2);
  auto c = compare_latencies(a, b);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->runs, 200);
  EXPECT_NEAR(c->median_a, 100.0, 1.0);
  EXPECT_NEAR(c->median_b, 80.0, 1.0);
  EXPECT_DOUBLE_EQ(c->ratio, c->median_b / c->median_a);
  EXPECT_LT(c->ci_low, 0.8);
  EXPECT_GT(c->ci_high, 0.8);
  EXPECT_LE(c->ci_low, c->ratio);
  EXPECT_GE(c->ci_high, c->ratio);
  EXPECT_LT(c->ci_high, 0.85);  // tight: 2% noise over 200 runs
  EXPECT_EQ(c->verdict, AbVerdict::BFaster);
  EXPECT_EQ(ab_verdict_text(c->verdict), "B faster");
}

TEST(AbStatsTest, ClearlySlowerBIsAFaster) {
  const auto a = latencies(200, 50.0, 0.02, 3), b = latencies(200, 60.0, 0.02, 4);
  auto c = compare_latencies(a, b);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_LT(c->ci_low, 1.2);
  EXPECT_GT(c->ci_high, 1.2);
  EXPECT_GT(c->ci_low, 1.0);
  EXPECT_EQ(c->verdict, AbVerdict::AFaster);
  EXPECT_EQ(ab_verdict_text(c->verdict), "A faster");
}

TEST(AbStatsTest, IdenticalSamplesAreNoDifference) {
  const auto a = latencies(200, 10.0, 0.05, 5);
  auto c = compare_latencies(a, a);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ratio, 1.0);
  EXPECT_EQ(c->ci_low, 1.0);  // paired resampling: every resample has the same median on both sides
  EXPECT_EQ(c->ci_high, 1.0);
  EXPECT_EQ(c->verdict, AbVerdict::NoDifference);
  EXPECT_EQ(ab_verdict_text(c->verdict), "no difference");
}

TEST(AbStatsTest, NoisySameDistributionIsNoDifference) {
  // 30% noise, equal medians: the interval is wide and contains the true ratio 1.
  const auto a = latencies(200, 20.0, 0.3, 6), b = latencies(200, 20.0, 0.3, 7);
  auto c = compare_latencies(a, b);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_LT(c->ci_low, 1.0);
  EXPECT_GT(c->ci_high, 1.0);
  EXPECT_GT(c->ci_high - c->ci_low, 0.05);
  EXPECT_EQ(c->verdict, AbVerdict::NoDifference);
}

TEST(AbStatsTest, NoisySmallDifferenceIsBracketedButNotDecided) {
  // A 3% difference under 30% noise with 50 runs: the interval contains both 1 and the truth.
  const auto a = latencies(50, 20.0, 0.3, 8), b = latencies(50, 20.6, 0.3, 9);
  auto c = compare_latencies(a, b);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_LT(c->ci_low, 1.03);
  EXPECT_GT(c->ci_high, 1.03);
  EXPECT_EQ(c->verdict, AbVerdict::NoDifference);
}

TEST(AbStatsTest, IntervalCoversTheTruthAboutAsOftenAsItClaims) {
  // 200 independent experiments with a true ratio of 0.9: a 95% interval should miss it in about
  // 10 of them (percentile bootstrap of medians is approximate: accept 2 to 25 misses).
  int misses = 0;
  BootstrapOptions o;
  o.resamples = 1000;
  for (uint64_t k = 0; k < 200; ++k) {
    const auto a = latencies(101, 100.0, 0.1, 1000 + 2 * k), b = latencies(101, 90.0, 0.1, 1001 + 2 * k);
    auto c = compare_latencies(a, b, o);
    ASSERT_TRUE(c) << c.error().message;
    if (!(c->ci_low <= 0.9 && 0.9 <= c->ci_high)) ++misses;
  }
  EXPECT_GE(misses, 2);
  EXPECT_LE(misses, 25);
}

TEST(AbStatsTest, DeterministicForASeedAndSeedMatters) {
  const auto a = latencies(100, 10.0, 0.2, 10), b = latencies(100, 10.5, 0.2, 11);
  auto c1 = compare_latencies(a, b), c2 = compare_latencies(a, b);
  ASSERT_TRUE(c1 && c2);
  EXPECT_EQ(c1->ci_low, c2->ci_low);
  EXPECT_EQ(c1->ci_high, c2->ci_high);
  BootstrapOptions other;
  other.seed = 2;
  auto c3 = compare_latencies(a, b, other);
  ASSERT_TRUE(c3);
  EXPECT_NE(c1->ci_low, c3->ci_low);
  EXPECT_EQ(c1->ratio, c3->ratio);
}

TEST(AbStatsTest, LevelWidensTheInterval) {
  const auto a = latencies(100, 10.0, 0.2, 12), b = latencies(100, 10.0, 0.2, 13);
  BootstrapOptions narrow;
  narrow.level = 0.5;
  auto wide = compare_latencies(a, b), small = compare_latencies(a, b, narrow);
  ASSERT_TRUE(wide && small);
  EXPECT_LT(wide->ci_low, small->ci_low);
  EXPECT_GT(wide->ci_high, small->ci_high);
}

TEST(AbStatsTest, BadSamplesAreErrors) {
  EXPECT_EQ(compare_latencies({}, {}).error().message, "no timed runs to compare");
  EXPECT_EQ(compare_latencies({1, 2}, {1}).error().message, "the two sides have different run counts (2 and 1)");
  EXPECT_FALSE(compare_latencies({1, 0}, {1, 1}));
  EXPECT_FALSE(compare_latencies({1, NAN}, {1, 1}));
  EXPECT_FALSE(compare_latencies({1, 1}, {1, INFINITY}));
  BootstrapOptions none;
  none.resamples = 0;
  EXPECT_FALSE(compare_latencies({1}, {1}, none));
  BootstrapOptions level;
  level.level = 1;
  EXPECT_FALSE(compare_latencies({1}, {1}, level));
}

}  // namespace
}  // namespace tessera::cli
