// Rank pairs, slowest relative to their kind (analyses/slow_links.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

struct SlowLinkRow {
  int a = -1;  // global ranks
  int b = -1;
  std::string hosts;  // "hostA <-> hostB"
  bool inter_host = false;
  double achieved_gbs = 0;      // best bandwidth any op crossing it reached
  double peer_median_gbs = 0;   // median of the same for links of its kind
  uint64_t ops = 0;             // ops crossing it
  uint64_t direct_ops = 0;      // of them, ops that crossed this pair only (sends and receives, collectives of two)
  uint64_t kind_links = 0;      // links of its kind measured (a median of fewer than 3 says nothing)
  double confidence = 0;
  bool flagged = false;
  // Timed by NCCL's proxy (ProxyStep records; 0 and empty where not): its slower direction's
  // bytes over their time on the wire, the median of the same over links of its kind, how many
  // such links and steps, and the share of the sender's step time spent waiting for the peer.
  double wire_gbs = 0;
  double wire_median_gbs = 0;
  uint64_t wire_links = 0;
  uint64_t wire_steps = 0;
  double wire_peer_wait_share = 0;
};

}  // namespace commtrace::report
