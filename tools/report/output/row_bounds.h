// How an output bounds what grows with a run's width: consecutive rows drawn as one, or the
// rows that matter most kept. One mechanism for the HTML charts (128 rows) and the JSON of a
// run wider than 1,024 ranks (json_parts.h).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace commtrace::report::bounds {

// How many consecutive rows go into one so that n make at most max_rows.
size_t groupOf(size_t n, size_t max_rows);

// `rows` taken `group` consecutive rows at a time, each cell the largest of its rows' (a cell
// absent() in all of them stays absent), so that one late rank still shows in its group.
std::vector<std::vector<double>> groupedMax(const std::vector<std::vector<double>>& rows, size_t group,
                                            const std::function<bool(double)>& absent);

// Indices 0..n-1, in their order: all of them, or past max_rows the max_rows of least key
// (the first of equal keys).
std::vector<size_t> keptRows(size_t n, size_t max_rows, const std::function<double(size_t)>& key);

}  // namespace commtrace::report::bounds
