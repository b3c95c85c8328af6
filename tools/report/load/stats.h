// Order statistics shared by the loader and the analyses.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace commtrace::report {

// The index (from 0) of the nearest-rank p-th percentile among n > 0 values, in order.
inline size_t nearestRank(size_t n, double p) {
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
  return rank == 0 ? 0 : rank - 1;
}

// Nearest-rank percentile (p in [0, 1]) of values; reorders them. 0 for no values, which
// callers never print: they check for emptiness first.
inline double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  const size_t k = nearestRank(values.size(), p);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

inline double median(std::vector<double> values) { return percentile(values, 0.5); }

// The k-th smallest (from 0) of `all` less `removed` (a sub-multiset of it), both sorted:
// what nth_element of the rest would find, without copying the rest. For every host, the
// median of the ranks elsewhere: copied per host, a 16,384-rank run's 2,048 hosts each
// copied and partly sorted 16,384 values. The k-th of the rest lies at most
// removed.size() places past k in `all`. 0 when the rest is shorter than k + 1.
inline double kthExcluding(const std::vector<double>& all, const std::vector<double>& removed, size_t k) {
  const auto before = [](const std::vector<double>& v, double x) { return std::lower_bound(v.begin(), v.end(), x) - v.begin(); };
  const auto through = [](const std::vector<double>& v, double x) { return std::upper_bound(v.begin(), v.end(), x) - v.begin(); };
  for (size_t p = k; p < all.size() && p <= k + removed.size(); ++p) {
    const double x = all[p];
    const auto rest_below = static_cast<size_t>(before(all, x) - before(removed, x));
    const auto rest_through = static_cast<size_t>(through(all, x) - through(removed, x));
    if (rest_below <= k && k < rest_through) return x;
  }
  return 0;
}

// median() of `all` less `removed`, as kthExcluding takes them.
inline double medianExcluding(const std::vector<double>& all, const std::vector<double>& removed) {
  const size_t n = all.size() - std::min(all.size(), removed.size());
  return n == 0 ? 0 : kthExcluding(all, removed, nearestRank(n, 0.5));
}

}  // namespace commtrace::report
