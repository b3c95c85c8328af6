// The bandwidth table's rows (analyses/bandwidth.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

// One line of the bandwidth table: one (communicator, func, size bucket, algo, proto).
struct BandwidthRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  uint64_t bytes = 0;  // nccl-tests S: message size (AllGather/ReduceScatter/AlltoAll: per-rank count x n)
  std::string bucket;  // "4-8 MiB"
  std::string algo;
  std::string proto;
  uint64_t count = 0;  // instances
  uint64_t timed = 0;  // instances with GPU times: the percentiles are over these
  double time_us_p50 = 0;  // transfer time: the shortest member's GPU duration (the last arriver's)
  double time_us_p90 = 0;
  double algbw_gbs_p50 = 0;
  double busbw_gbs_p50 = 0;
  // 0 when the percentiles are exact; else the relative error they are within (QuantileSketch:
  // a row of more than 4,096 distinct times or bandwidths is summarised, not held).
  double percentile_error = 0;
  // Why algbw/busbw (and, when timed == 0, the times) are absent; "" when they are present.
  // E.g. the size was not recorded (NCCL 2.28 names ncclUint8 "Unknown"): counted, no bandwidth.
  std::string no_bandwidth;
  // As `nsys stats` sums kernels: the transfer times' total, least and most, and the total's
  // share of every row's (what share of the job's communication time this group took).
  double time_us_total = 0;
  double time_us_min = 0;
  double time_us_max = 0;
  double time_fraction = 0;
  uint8_t channels = 0;  // the most channels any of its ops ran on (NCCL's nChannels; 0: not recorded)
};

}  // namespace commtrace::report
