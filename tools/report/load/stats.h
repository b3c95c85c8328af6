// Order statistics shared by the loader and the analyses.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace commtrace::report {

// Nearest-rank percentile (p in [0, 1]) of values; reorders them. 0 for no values, which
// callers never print: they check for emptiness first.
inline double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  const size_t k = rank == 0 ? 0 : rank - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

inline double median(std::vector<double> values) { return percentile(values, 0.5); }

}  // namespace commtrace::report
