#include "tools/report/load/linear_fit.h"

#include <algorithm>
#include <cmath>

namespace commtrace::report {
double upperMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

namespace {

double rmsOf(const std::vector<double>& r) {
  double sum = 0;
  for (double e : r) sum += e * e;
  return r.empty() ? 0 : std::sqrt(sum / static_cast<double>(r.size()));
}

}  // namespace

LineFit fitLeastSquares(const std::vector<FitPoint>& points, bool fit_slope) {
  LineFit fit;
  if (points.empty()) return fit;
  const double n = static_cast<double>(points.size());
  double mean_x = 0, mean_y = 0;
  for (const FitPoint& p : points) {
    mean_x += p.x / n;
    mean_y += p.y / n;
  }
  double sxx = 0, sxy = 0;
  for (const FitPoint& p : points) {
    sxx += (p.x - mean_x) * (p.x - mean_x);
    sxy += (p.x - mean_x) * (p.y - mean_y);
  }
  fit.slope_fitted = fit_slope && sxx > 0;
  if (fit.slope_fitted) fit.slope = sxy / sxx;
  fit.intercept = mean_y - fit.slope * mean_x;
  fit.kept = points.size();
  fit.valid = true;
  fit.rms = rmsOf(residuals(points, fit));
  if (fit.slope_fitted && points.size() > 2) {
    fit.slope_stderr = std::sqrt(fit.rms * fit.rms * n / (n - 2) / sxx);
  }
  return fit;
}

LineFit fitRobust(std::vector<FitPoint>& points, bool fit_slope, double floor) {
  const LineFit first = fitLeastSquares(points, fit_slope);
  if (points.size() < 3) return first;
  const std::vector<double> r = residuals(points, first);
  const double center = upperMedian(r);
  std::vector<double> deviation(r.size());
  for (size_t i = 0; i < r.size(); ++i) deviation[i] = std::abs(r[i] - center);
  // 1.4826 MAD estimates the standard deviation of normal noise; 5 of them is far out.
  const double limit = std::max(5 * 1.4826 * upperMedian(deviation), floor);
  std::vector<FitPoint> kept;
  kept.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (deviation[i] <= limit) kept.push_back(points[i]);
  }
  if (kept.size() == points.size() || kept.size() < 2) return first;
  const size_t outliers = points.size() - kept.size();
  points = std::move(kept);
  LineFit fit = fitLeastSquares(points, fit_slope);
  fit.outliers = outliers;
  return fit;
}

std::vector<double> residuals(const std::vector<FitPoint>& points, const LineFit& fit) {
  std::vector<double> out;
  out.reserve(points.size());
  for (const FitPoint& p : points) out.push_back(p.y - fit.at(p.x));
  return out;
}

LinearMap absoluteMap(const LineFit& fit, uint64_t x0, uint64_t y0) {
  LinearMap map;
  if (!fit.valid) return map;
  map.slope = fit.slope;
  // long double keeps the 64 bits of a raw clock reading; the stored double rounds once.
  map.intercept = static_cast<double>(static_cast<long double>(y0) + fit.intercept -
                                      static_cast<long double>(fit.slope) * static_cast<long double>(x0));
  map.valid = true;
  return map;
}

LinearMap fitClockMap(const std::vector<std::pair<uint64_t, uint64_t>>& samples) {
  if (samples.empty()) return {};
  const auto [x0, y0] = samples.front();
  std::vector<FitPoint> points;
  points.reserve(samples.size());
  for (const auto& [x, y] : samples) {
    points.push_back({static_cast<double>(static_cast<int64_t>(x - x0)), static_cast<double>(static_cast<int64_t>(y - y0))});
  }
  return absoluteMap(fitLeastSquares(points, samples.size() >= 2), x0, y0);
}

double rmsResidual(const std::vector<std::pair<uint64_t, uint64_t>>& samples, const LinearMap& map) {
  if (samples.empty() || !map.valid) return 0;
  double sum = 0;
  for (const auto& [x, y] : samples) {
    // Good to the 256 ns a double keeps at ~1.8e18 ns, like the map itself.
    const double e = map.apply(static_cast<double>(x)) - static_cast<double>(y);
    sum += e * e;
  }
  return std::sqrt(sum / static_cast<double>(samples.size()));
}

}  // namespace commtrace::report
