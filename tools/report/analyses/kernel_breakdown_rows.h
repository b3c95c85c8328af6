// GPU kernels by name and type (analyses/kernel_breakdown.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// GPU activity by name, as HTA's kernel breakdown has it. Types are HTA's: communication
// (NCCL's kernels), memory (memcpys and memsets), computation (every other kernel).
struct KernelRow {
  int rank = -1;  // -1: all ranks together
  std::string name;
  std::string type;  // "computation", "communication", "memory"
  int ranks = 0;     // ranks that ran it
  uint64_t count = 0;
  double total_us = 0;
  double avg_us = 0;
  double max_us = 0;
  double share_pct = 0;  // of the GPU activity time of its rank (all ranks' for rank -1)
};

struct KernelTypeRow {
  int rank = -1;
  double computation_us = 0;
  double communication_us = 0;
  double memory_us = 0;
};

struct KernelBreakdown {
  std::vector<KernelRow> top;          // all ranks together, most total time first
  std::vector<KernelRow> per_rank;     // each rank's top kernels by total time, in rank order
  std::vector<KernelRow> per_rank_by_count;  // each rank's most frequent kernels, in rank order
  std::vector<KernelTypeRow> types;    // per rank with CUPTI records, in rank order
};

}  // namespace commtrace::report
