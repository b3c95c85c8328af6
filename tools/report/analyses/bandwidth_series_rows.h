// busBw over time (analyses/bandwidth_series.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// busBw over time per (communicator, func), in columns of the aligned timeline (reference
// GPU clock, us), like the lateness heatmap's.
struct BandwidthSeriesRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  std::vector<uint64_t> ops;       // [column] collective instances that ended in it
  std::vector<double> busbw_gbs;   // [column] summed bus bytes / summed transfer time; -1 without an op
};

struct BandwidthSeries {
  std::string axis = "not aligned";  // "aligned time", or no series: no clock could be aligned
  double start_us = 0, bin_us = 0;
  std::vector<BandwidthSeriesRow> rows;
};

}  // namespace commtrace::report
