// How much a per-process sample keeps as a run widens. Samples kept per process (late
// arrivals, clock anchors, fine time bins, recent ops) multiply by the run's width: at 16,384
// processes their sizes tuned at 1,024 filled gigabytes. Up to kFullWidth processes a sample
// keeps its full size, so narrow runs are analysed exactly as before; past it the size halves
// each time the width doubles, the whole run's samples staying about what kFullWidth
// processes hold, down to a floor below which the figure drawn from the sample would stop
// meaning anything. In halvings, not in proportion: a followed run gains its files one by
// one, and a sample cut to size a few times is cheap where one cut at every file was not.
// SCHEMA.md ("Wide runs") and docs/report.md say which figures rest on these samples.
#pragma once

#include <cstddef>

namespace commtrace::report {

constexpr size_t kFullWidth = 1024;

// `full` kept per process at up to kFullWidth processes, half of it up to twice as many,
// and so on, never under `floor` (a floor over `full` keeps `full`).
constexpr size_t keptAtWidth(size_t full, size_t processes, size_t floor) {
  size_t kept = full;
  for (size_t width = kFullWidth; width < processes && kept / 2 >= floor; width *= 2) kept /= 2;
  return kept;
}

}  // namespace commtrace::report
