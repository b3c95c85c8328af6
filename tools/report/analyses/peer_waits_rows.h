// Point-to-point waits (analyses/peer_waits.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>

namespace commtrace::report {

// Point-to-point waits between ranks (pipeline stages): a send or receive whose kernel ran
// longer than its peer's waited for the peer to arrive, by the difference (the two kernels
// end together), so no clock alignment is involved. One row per (rank, the peer it waited on).
struct PeerWaitRow {
  int rank = -1;      // who waited
  int peer = -1;      // on whom
  uint64_t transfers = 0;
  uint64_t waited = 0;   // transfers in which it waited at all
  double wait_us = 0;
  int steps = 0;                // the waiting rank's steps (the overlap table's)
  double wait_per_step_us = 0;  // wait_us / steps, when it has steps
  double step_share_pct = 0;    // wait per step over its mean step length, when known
};

}  // namespace commtrace::report
