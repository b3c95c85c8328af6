#include "tools/report/analyses/peer_waits.h"

#include <algorithm>
#include <map>

namespace commtrace::report {
namespace {

}  // namespace

std::vector<PeerWaitRow> peerWaits(const RunModel& run, const std::vector<OverlapRow>& overlap) {
  const NameId send = run.names.find("Send");
  if (send == 0) return {};
  std::map<std::pair<int, int>, PeerWaitRow> rows;
  const auto note = [&](const MemberView& waiter, const MemberView& peer, uint64_t wait_ns) {
    const int rank = run.processes[waiter.process].rank, other = run.processes[peer.process].rank;
    PeerWaitRow& row = rows[{rank, other}];
    row.rank = rank;
    row.peer = other;
    ++row.transfers;
    row.waited += wait_ns > 0;
    row.wait_us += static_cast<double>(wait_ns) / 1e3;
  };
  for (const P2pTransfer& t : run.transfers) {
    // Plain sends only: AlltoAll/Gather/Scatter pieces wait on the slowest of many peers.
    if (t.func != send || t.send.process < 0 || t.recv.process < 0) continue;
    const uint64_t s = t.send.gpuDuration(), r = t.recv.gpuDuration();
    if (s == 0 || r == 0) continue;
    note(t.recv, t.send, r > s ? r - s : 0);
    note(t.send, t.recv, s > r ? s - r : 0);
  }
  std::vector<PeerWaitRow> out;
  for (auto& [key, row] : rows) {
    if (row.waited == 0) continue;
    const auto o = std::find_if(overlap.begin(), overlap.end(), [&](const OverlapRow& x) { return x.rank == row.rank; });
    if (o != overlap.end() && o->step_count > 0) {
      row.steps = o->step_count;
      row.wait_per_step_us = row.wait_us / row.steps;
      if (o->mean_step_us > 0) row.step_share_pct = 100.0 * row.wait_per_step_us / o->mean_step_us;
    }
    out.push_back(row);
  }
  std::stable_sort(out.begin(), out.end(), [](const PeerWaitRow& a, const PeerWaitRow& b) { return a.wait_us > b.wait_us; });
  return out;
}

}  // namespace commtrace::report
