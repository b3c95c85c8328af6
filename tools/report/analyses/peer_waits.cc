#include "tools/report/analyses/peer_waits.h"

#include <algorithm>

#include "tools/report/load/op_stream.h"

namespace commtrace::report {

void PeerWaitTally::transfer(const P2pTransfer& t) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(t.func);
  if (func == nullptr || func->func != nccl::Func::kSend || t.send.process < 0 || t.recv.process < 0) return;
  const uint64_t s = t.send.gpuDuration(), r = t.recv.gpuDuration();
  if (s == 0 || r == 0) return;
  note(t.recv.process, t.send.process, r > s ? r - s : 0);
  note(t.send.process, t.recv.process, s > r ? s - r : 0);
}

void PeerWaitTally::note(int32_t waiter, int32_t peer, uint64_t wait_ns) {
  Sums& sums = pairs_[{waiter, peer}];
  ++sums.transfers;
  sums.waited += wait_ns > 0;
  sums.wait_ns += wait_ns;
}

void PeerWaitTally::merge(const PeerWaitTally& other) {
  for (const auto& [pair, theirs] : other.pairs_) {
    Sums& sums = pairs_[pair];
    sums.transfers += theirs.transfers;
    sums.waited += theirs.waited;
    sums.wait_ns += theirs.wait_ns;
  }
}

std::vector<PeerWaitRow> peerWaits(const RunModel& run, const std::vector<OverlapRow>& overlap) {
  PeerWaitTally waits;
  replayRun(run, waits);
  return peerWaits(run, waits, overlap);
}

std::vector<PeerWaitRow> peerWaits(const RunModel& run, const PeerWaitTally& waits, const std::vector<OverlapRow>& overlap) {
  // Processes to ranks: a restarted rank's processes share its rows.
  std::map<std::pair<int, int>, PeerWaitTally::Sums> by_rank;
  for (const auto& [pair, sums] : waits.pairs()) {
    PeerWaitTally::Sums& s = by_rank[{run.processes[pair.first].rank, run.processes[pair.second].rank}];
    s.transfers += sums.transfers;
    s.waited += sums.waited;
    s.wait_ns += sums.wait_ns;
  }
  std::vector<PeerWaitRow> out;
  for (const auto& [ranks, sums] : by_rank) {
    if (sums.waited == 0) continue;
    PeerWaitRow row{.rank = ranks.first, .peer = ranks.second, .transfers = sums.transfers, .waited = sums.waited,
                    .wait_us = static_cast<double>(sums.wait_ns) / 1e3};
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
