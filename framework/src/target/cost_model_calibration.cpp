// Calibration of the cost model's coefficients (see cost_model_calibration.h): alternating
// assignment of each wave's bounding term and weighted least squares on the coefficients.
// Tests: tests/unit/cost_model_test.cpp (CostModelCalibrationTest).
#include "tessera/target/cost_model_calibration.h"

#include <algorithm>
#include <cmath>

namespace tessera {
namespace {

constexpr size_t kN = kCostCoefficients;
using Theta = std::array<double, kN>;
using Row = std::array<double, kN>;

// How strongly each coefficient is pulled towards its starting value (relative to one sample's
// squared relative error): enough to pin what no sample informs, too little to bias what they do.
constexpr double kPull = 1e-8;
constexpr int kMaxIterations = 50;

// The row of `f` under `theta`: for every coefficient, its summed input over the waves where its
// term bounds the wave (and 1 for the launch overhead); `bounds` receives each wave's bounding term.
Row row_of(const KernelFeatures& f, const Theta& theta, std::vector<size_t>& bounds) {
  Row row{};
  row[static_cast<size_t>(CostCoefficient::LaunchOverheadUs)] = 1;
  bounds.clear();
  for (const KernelFeatures::Wave& w : f.waves) {
    std::array<double, kCostTerms> terms{};
    for (size_t c = 0; c < kN; ++c)
      if (auto t = term_of(static_cast<CostCoefficient>(c))) terms[static_cast<size_t>(*t)] += theta[c] * w.inputs[c];
    const size_t top = static_cast<size_t>(std::max_element(terms.begin(), terms.end()) - terms.begin());
    bounds.push_back(top);
    for (size_t c = 0; c < kN; ++c) {
      auto t = term_of(static_cast<CostCoefficient>(c));
      if (t && static_cast<size_t>(*t) == top) row[c] += w.count * w.inputs[c];
    }
  }
  return row;
}

double predict(const Row& row, const Theta& theta) {
  double y = 0;
  for (size_t c = 0; c < kN; ++c) y += row[c] * theta[c];
  return y;
}

// Solves A x = b (n x n, row-major) by Gaussian elimination with partial pivoting; false when
// singular.
bool solve(std::vector<double> a, std::vector<double> b, size_t n, std::vector<double>& x) {
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    if (std::abs(a[pivot * n + col]) < 1e-300) return false;
    if (pivot != col) {
      for (size_t c = 0; c < n; ++c) std::swap(a[col * n + c], a[pivot * n + c]);
      std::swap(b[col], b[pivot]);
    }
    for (size_t r = col + 1; r < n; ++r) {
      const double m = a[r * n + col] / a[col * n + col];
      for (size_t c = col; c < n; ++c) a[r * n + c] -= m * a[col * n + c];
      b[r] -= m * b[col];
    }
  }
  x.assign(n, 0);
  for (size_t r = n; r-- > 0;) {
    double s = b[r];
    for (size_t c = r + 1; c < n; ++c) s -= a[r * n + c] * x[c];
    x[r] = s / a[r * n + r];
  }
  return true;
}

struct Errors {
  double rms = 0, median = 0, max = 0;
};

Errors errors_of(const std::vector<CalibrationSample>& samples, const Theta& theta) {
  std::vector<double> rel;
  std::vector<size_t> bounds;
  for (const CalibrationSample& s : samples)
    rel.push_back(std::abs(predict(row_of(s.features, theta, bounds), theta) - s.measured_us) / s.measured_us);
  Errors e;
  double sq = 0;
  for (double r : rel) {
    sq += r * r;
    e.max = std::max(e.max, r);
  }
  e.rms = std::sqrt(sq / static_cast<double>(rel.size()));
  std::sort(rel.begin(), rel.end());
  const size_t n = rel.size();
  e.median = n % 2 == 1 ? rel[n / 2] : (rel[n / 2 - 1] + rel[n / 2]) / 2;
  return e;
}

}  // namespace

Expected<CostModel> calibrate(const CostModel& start, const std::vector<CalibrationSample>& samples,
                              CalibrationFit* fit) {
  if (samples.empty()) return make_error("calibration: no samples (no kernel time to fit)");
  for (const CalibrationSample& s : samples)
    if (!(s.measured_us > 0) || !std::isfinite(s.measured_us))
      return make_error("calibration: sample '" + s.label + "' has a measured time that is not positive");
  Theta start_theta{};
  for (size_t c = 0; c < kN; ++c) start_theta[c] = start.linear_value(static_cast<CostCoefficient>(c));

  Theta theta = start_theta;
  Theta best = theta;
  double best_rms = errors_of(samples, theta).rms;
  std::vector<std::vector<size_t>> previous(samples.size());
  int iterations = 0;
  for (; iterations < kMaxIterations; ++iterations) {
    // Rows under the current bounding terms.
    std::vector<Row> rows;
    bool changed = iterations == 0;
    std::array<bool, kN> seen{};
    for (size_t i = 0; i < samples.size(); ++i) {
      std::vector<size_t> bounds;
      rows.push_back(row_of(samples[i].features, theta, bounds));
      changed = changed || bounds != previous[i];
      previous[i] = std::move(bounds);
      for (size_t c = 0; c < kN; ++c) seen[c] = seen[c] || rows.back()[c] != 0;
    }
    if (!changed) break;
    // Weighted least squares on the informed coefficients; a coefficient fitted non-positive is
    // held at its start and the rest solved again.
    std::array<bool, kN> held{};
    Theta next = theta;
    for (int attempt = 0; attempt <= static_cast<int>(kN); ++attempt) {
      std::vector<size_t> free;
      for (size_t c = 0; c < kN; ++c)
        if (seen[c] && !held[c]) free.push_back(c);
      for (size_t c = 0; c < kN; ++c)
        if (!seen[c] || held[c]) next[c] = start_theta[c];
      const size_t n = free.size();
      if (n == 0) break;
      std::vector<double> a(n * n, 0), b(n, 0);
      for (size_t i = 0; i < samples.size(); ++i) {
        const double w = 1 / (samples[i].measured_us * samples[i].measured_us);
        double fixed = 0;
        for (size_t c = 0; c < kN; ++c)
          if (!seen[c] || held[c]) fixed += rows[i][c] * next[c];
        const double target = samples[i].measured_us - fixed;
        for (size_t p = 0; p < n; ++p) {
          b[p] += w * rows[i][free[p]] * target;
          for (size_t q = 0; q < n; ++q) a[p * n + q] += w * rows[i][free[p]] * rows[i][free[q]];
        }
      }
      for (size_t p = 0; p < n; ++p) {
        const double s = start_theta[free[p]];
        a[p * n + p] += kPull / (s * s);
        b[p] += kPull / s;
      }
      std::vector<double> x;
      if (!solve(a, b, n, x)) break;
      bool all_positive = true;
      for (size_t p = 0; p < n; ++p) {
        if (x[p] > 0) continue;
        held[free[p]] = true;
        all_positive = false;
      }
      if (!all_positive) continue;
      for (size_t p = 0; p < n; ++p) next[free[p]] = x[p];
      break;
    }
    theta = next;
    const double rms = errors_of(samples, theta).rms;
    if (rms < best_rms) {
      best_rms = rms;
      best = theta;
    }
  }

  CostModel out = start;
  for (size_t c = 0; c < kN; ++c) out.set_linear_value(static_cast<CostCoefficient>(c), best[c]);
  if (fit) {
    fit->samples = samples.size();
    fit->iterations = iterations;
    fit->rms_error_before = errors_of(samples, start_theta).rms;
    const Errors after = errors_of(samples, best);
    fit->rms_error_after = after.rms;
    fit->median_error_after = after.median;
    fit->max_error_after = after.max;
    fit->fitted.clear();
    fit->kept.clear();
    for (size_t c = 0; c < kN; ++c)
      (best[c] != start_theta[c] ? fit->fitted : fit->kept).push_back(static_cast<CostCoefficient>(c));
  }
  return out;
}

}  // namespace tessera
