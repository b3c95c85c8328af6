#include "tools/report/analyses/lateness.h"

#include <algorithm>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/rank_index.h"
#include "tools/report/load/stats.h"

namespace commtrace::report {

bool arrivalsOf(const RunModel& run, const CollInstance& c, InstanceArrivals& out) {
  if (!arrivalsOf(isSynchronizing(run.name(c.func)), {run.membersOf(c), c.n_members}, out)) return false;
  for (MemberArrival& a : out.members) a.rank = globalRankOf(run.comms[c.comm], a.comm_rank);
  return true;
}

bool arrivalsOf(bool synchronizing, std::span<const MemberView> m, InstanceArrivals& out) {
  out.members.clear();
  out.total_wait_ns = out.first_lateness_ns = 0;
  if (!synchronizing) return false;
  uint64_t shortest = UINT64_MAX, longest = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    const uint64_t d = m[i].gpuDuration();
    if (d == 0) continue;
    MemberArrival a;
    a.comm_rank = static_cast<int>(i);
    a.process = m[i].process;
    a.gpu_start_ns = m[i].gpu_start_ns;
    a.duration_ns = d;
    out.members.push_back(a);
    shortest = std::min(shortest, d);
    longest = std::max(longest, d);
  }
  if (out.members.size() < 2) {
    out.members.clear();
    return false;
  }
  int tied_last = 0;
  for (MemberArrival& a : out.members) {
    a.wait_ns = a.duration_ns - shortest;
    a.lateness_ns = longest - a.duration_ns;
    out.total_wait_ns += a.wait_ns;
    if (a.wait_ns < kTieNs) ++tied_last;
  }
  for (MemberArrival& a : out.members)
    if (a.wait_ns < kTieNs) a.last_share = 1.0 / tied_last;
  out.first_lateness_ns = longest - shortest;
  return true;
}

double peersMedianGapUs(const InstanceArrivals& arrivals, std::span<const MemberView> members, std::vector<double>& peer_gaps) {
  peer_gaps.clear();
  for (const MemberArrival& m : arrivals.members) {
    const uint64_t gap = members[static_cast<size_t>(m.comm_rank)].gpu_gap_ns;
    if (gap != MemberView::kNoGap && m.last_share == 0) peer_gaps.push_back(static_cast<double>(gap) / 1e3);
  }
  if (peer_gaps.empty()) return -1;
  return percentile(peer_gaps, 0.5);
}

}  // namespace commtrace::report
