// Calibration of the cost model: fits its linear coefficients to measured kernel latencies.
//
// The model is linear in its coefficients once each wave's bounding term is fixed (cost_model.h),
// so the fit alternates: bound every sample's waves with the current coefficients, solve the
// weighted least squares for the coefficients (each sample weighted by 1 / its measured time, so
// the fit minimises relative error; a faint pull towards the starting values keeps coefficients no
// sample informs at their priors), and repeat until the bounding terms stop changing. A
// coefficient whose term bounds no sample, or whose fit is not positive, keeps its starting value.
// The priors (CostPriors) are not fitted. docs/cost-model.md, "Calibration".
#pragma once

#include <string>
#include <vector>

#include "tessera/support/status.h"
#include "tessera/target/cost_model.h"

namespace tessera {

struct CalibrationSample {
  std::string label;       // where it came from, for messages: "<entry>: <kernel>"
  KernelFeatures features; // the kernel on the device it ran on (CostModel::features)
  double measured_us = 0;  // its measured latency (> 0)
};

struct CalibrationFit {
  size_t samples = 0;
  int iterations = 0;
  // Relative error |estimate - measured| / measured over the samples, before and after the fit.
  double rms_error_before = 0, rms_error_after = 0;
  double median_error_after = 0, max_error_after = 0;
  std::vector<CostCoefficient> fitted;  // moved to fit the samples
  std::vector<CostCoefficient> kept;    // left at the starting value (no sample informs them)
};

// The model with its coefficients fitted to `samples` (every other field as in `start`); `fit`,
// when given, receives the fit's figures. An error when there are no samples or one has a
// non-positive time.
Expected<CostModel> calibrate(const CostModel& start, const std::vector<CalibrationSample>& samples,
                              CalibrationFit* fit = nullptr);

}  // namespace tessera
