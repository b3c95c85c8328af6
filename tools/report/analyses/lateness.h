// Who arrived last at a synchronizing collective and how long the others waited for it,
// from the members' GPU durations alone (docs/report.md): members stop
// together, so the last to arrive has the shortest duration, a member's wait is its
// duration minus the shortest, and its arrival after the first is the longest minus its
// own. No clock is compared across ranks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Durations closer than this tie: two ticks of the 1024 ns GPU globaltimer.
constexpr uint64_t kTieNs = 2048;

struct MemberArrival {
  int comm_rank = -1;
  int rank = -1;  // global; -1 unknown
  int32_t process = -1;
  uint64_t gpu_start_ns = 0;  // its own GPU clock
  uint64_t duration_ns = 0;
  uint64_t wait_ns = 0;      // duration - shortest duration
  uint64_t lateness_ns = 0;  // longest duration - duration: how long after the first arriver it came
  double last_share = 0;     // 1/k for each of the k members tied for last, else 0
};

struct InstanceArrivals {
  std::vector<MemberArrival> members;  // those with GPU times
  uint64_t total_wait_ns = 0;          // everyone's wait: what the last arrivers caused
  uint64_t first_lateness_ns = 0;      // the longest lateness: the last arriver's
};

// Fills out for a synchronizing collective (op_metrics.h) with at least two members that
// recorded GPU times; false, out cleared, otherwise.
bool arrivalsOf(const RunModel& run, const CollInstance& c, InstanceArrivals& out);
// The same from an instance's seats in comm-rank order, as the stream hands them on (global
// ranks are settled only at its end: every MemberArrival::rank is -1).
bool arrivalsOf(bool synchronizing, std::span<const MemberView> members, InstanceArrivals& out);

// The median GPU gap before the instance (MemberView::gpu_gap_ns, in us) of its members not
// last at it, given the arrivals arrivalsOf() filled for those seats; `peer_gaps` (the
// caller's, reused) is left holding every such gap, reordered. -1 when none was measured.
double peersMedianGapUs(const InstanceArrivals& arrivals, std::span<const MemberView> members, std::vector<double>& peer_gaps);

}  // namespace commtrace::report
