// Straight-line fits between clocks. Clock readings are ~1.8e18 ns, where a double keeps
// only 256 ns; so fits work on differences from a reading of each clock (exact in int64)
// and only the final LinearMap carries absolute values.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A sample relative to chosen origins of both clocks.
struct FitPoint {
  double x = 0;
  double y = 0;
};

struct LineFit {
  double slope = 1.0;
  double intercept = 0.0;  // y at x == 0
  double rms = 0;          // of the residuals of the points kept
  bool slope_fitted = false;  // else held at 1 (not asked for, or all x equal)
  double slope_stderr = 0;    // standard error of the slope; 0 with fewer than 3 points
  size_t kept = 0;
  size_t outliers = 0;  // dropped by fitRobust
  bool valid = false;
  double at(double x) const { return slope * x + intercept; }
};

// Least squares; the slope is fitted only with fit_slope and two distinct x, else it is 1.
LineFit fitLeastSquares(const std::vector<FitPoint>& points, bool fit_slope);

// Least squares, then once more without the points whose residual exceeds 5 median absolute
// deviations (and `floor`, so that quantized but perfect data keeps its points). The
// points dropped are removed from `points`.
LineFit fitRobust(std::vector<FitPoint>& points, bool fit_slope, double floor);

// The middle value (the upper one of an even count); 0 for none.
double upperMedian(std::vector<double> v);

// Residual of each point under fit, in the order given.
std::vector<double> residuals(const std::vector<FitPoint>& points, const LineFit& fit);

// x -> y for simultaneous readings (x, y) of two raw nanosecond clocks; invalid when empty.
LinearMap fitClockMap(const std::vector<std::pair<uint64_t, uint64_t>>& samples);

// Root mean square of map(x) - y over the samples; 0 for none.
double rmsResidual(const std::vector<std::pair<uint64_t, uint64_t>>& samples, const LinearMap& map);

// The absolute map of a fit made relative to origins: y = y0 + fit(x - x0).
LinearMap absoluteMap(const LineFit& fit, uint64_t x0, uint64_t y0);

}  // namespace commtrace::report
