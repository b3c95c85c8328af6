// The communication matrix (analyses/comm_matrix.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// Bytes and time between two ranks.
struct MatrixCell {
  int src = 0;  // global ranks
  int dst = 0;
  uint64_t bytes = 0;
  uint64_t p2p_bytes = 0;  // the measured part of bytes (recorded point-to-point)
  double time_us = 0;    // summed transfer time of the ops that moved them
  double gbs = 0;        // bytes of the ops with GPU times / time_us; absent (0) when time_us is 0
  bool measured = false;  // true: every byte a recorded point-to-point; false: some modelled from a collective's algorithm
};

// The matrix for one slice (whole run, one communicator, or one func).
struct MatrixSlice {
  std::string label;  // "all", "comm tp.0 (0x...)", "AllReduce"
  uint64_t comm = 0;  // 0 when not per communicator
  std::string func;   // "" when not per func
  std::vector<MatrixCell> cells;  // non-zero cells only
};

struct CommMatrix {
  // The dense grids below are made for runs of at most this many ranks: ranks x ranks cells
  // are 24 MB at 1,024 ranks, 6 GB at 16,384 (and 100 GB for one record claiming global rank
  // 65535). Larger runs have the slices' sparse cells only (the "all" slice is the grid's).
  static constexpr int kMaxDenseRanks = 1024;
  int ranks = 0;
  bool dense = false;  // the grids below are filled
  std::vector<std::vector<uint64_t>> bytes;      // [src][dst], everything
  std::vector<std::vector<uint64_t>> p2p_bytes;  // [src][dst], recorded sends only
  std::vector<std::vector<double>> time_us;      // [src][dst]
  std::vector<MatrixSlice> slices;
  std::string model;  // how collectives were decomposed, in words
};

}  // namespace commtrace::report
