// Lateness per rank over time (analyses/lateness_heatmap.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// Lateness over time: rows are ranks, columns time bins of the aligned timeline.
struct LatenessHeatmap {
  std::vector<int> ranks;
  // "aligned time": bins of bin_us from start_us on the aligned timeline (reference GPU clock, us);
  // "op order": the clocks could not be aligned, bins of bin_ops per-communicator op indices.
  std::string axis;
  double bin_us = 0;
  double start_us = 0;
  double bin_ops = 0;
  std::vector<std::vector<double>> mean_lateness_us;  // [rank row][bin]; -1 where the rank had no instance in the bin
};

}  // namespace commtrace::report
