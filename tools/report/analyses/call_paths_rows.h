// Communication by the NVTX path it was issued under (analyses/call_paths.h).
// Plain data: times in microseconds.
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

// The ops every rank issued under one NVTX path, the steps' ranges folded into one
// ("train_step # / backward / layers.3"): which part of the program the communication
// time comes from.
struct CallPathRow {
  std::string path;
  uint64_t ops = 0;     // rank-ops: one collective on 8 ranks is 8
  int ranks = 0;        // ranks that issued ops under it
  uint64_t bytes = 0;   // the ops' payload as each rank recorded it (a transfer on both its sides)
  double comm_us = 0;   // the ops' GPU time, summed over ranks
  double comm_share = 0;  // of all the ops' GPU time, 0..1
  // The part of comm_us under no compute kernel of its rank (each op's own interval), where
  // every rank that issued under the path recorded its compute (overlap available).
  bool exposure_known = false;
  double exposed_us = 0;
  double exposed_share = 0;  // of comm_us, 0..1
  // Its ranks' own waits in its ops for a later member (part of comm_us: what a late peer,
  // not moving the data, took). Not known where an op was a piece of an AlltoAll, Gather or
  // Scatter (PathComm::call_pieces).
  bool waited_known = true;
  double waited_us = 0;
  // The others' waiting caused by delays created before its ops (the root-cause walk's, summed
  // by the path of the op a rank was late for, and passed along as the straggler table's is).
  double wait_caused_us = 0;
};

// One NVTX path's waiting as the root-cause walk sums it, in ns (CallPathRow's waited_us and
// wait_caused_us).
struct PathWaiting {
  double waited_ns = 0;
  double wait_caused_ns = 0;
};

}  // namespace commtrace::report
