#include "tools/report/output/row_bounds.h"

#include <algorithm>
#include <numeric>

namespace commtrace::report::bounds {

size_t groupOf(size_t n, size_t max_rows) { return std::max<size_t>(1, (n + max_rows - 1) / max_rows); }

std::vector<std::vector<double>> groupedMax(const std::vector<std::vector<double>>& rows, size_t group,
                                            const std::function<bool(double)>& absent) {
  std::vector<std::vector<double>> out;
  for (size_t first = 0; first < rows.size(); first += group) {
    std::vector<double> row = rows[first];
    for (size_t r = first + 1; r < std::min(rows.size(), first + group); ++r)
      for (size_t c = 0; c < row.size() && c < rows[r].size(); ++c)
        if (!absent(rows[r][c]) && (absent(row[c]) || rows[r][c] > row[c])) row[c] = rows[r][c];
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<size_t> keptRows(size_t n, size_t max_rows, const std::function<double(size_t)>& key) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (n <= max_rows) return order;
  std::vector<double> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = key(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  order.resize(max_rows);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace commtrace::report::bounds
