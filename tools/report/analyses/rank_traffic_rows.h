// What each rank moved (analyses/rank_traffic.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

// One rank's communication over the run: its collectives, its point-to-point sends and
// receives (AlltoAll, Gather and Scatter pieces included) and their payload. A rank whose
// bytes stand far from the median rank's carries an uneven share of the traffic (an MoE
// layer's experts, an uneven pipeline split). Time is the overlap table's: summed op by op
// it would count a grouped kernel once per op in it.
struct RankTrafficRow {
  int rank = -1;
  std::string host;
  uint64_t collectives = 0;     // instances it took part in
  uint64_t coll_bytes = 0;      // their per-rank payload, summed
  uint64_t sends = 0;
  uint64_t sent_bytes = 0;
  uint64_t receives = 0;
  uint64_t received_bytes = 0;
  double bytes_vs_median = 0;   // (coll_bytes + sent_bytes) over the median rank's; 0 when the median moved nothing
};

}  // namespace commtrace::report
