#include "tools/report/analyses/op_metrics.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace commtrace::report {

// The last member to arrive waits for nobody: its GPU duration is the transfer.
uint64_t transferNs(std::span<const MemberView> members) {
  uint64_t shortest = 0;
  for (const MemberView& m : members) {
    const uint64_t d = m.gpuDuration();
    if (d != 0 && (shortest == 0 || d < shortest)) shortest = d;
  }
  return shortest;
}

uint64_t transferNs(const RunModel& run, const CollInstance& c) { return transferNs({run.membersOf(c), c.n_members}); }

uint64_t transferNs(const P2pCall& call) { return transferNs(call.members); }

uint64_t transferNs(const P2pTransfer& t) {
  const uint64_t s = t.send.gpuDuration(), r = t.recv.gpuDuration();
  if (s == 0 || r == 0) return std::max(s, r);
  return std::min(s, r);
}

std::vector<uint64_t> transferTimes(const RunModel& run) {
  std::vector<uint64_t> times;
  times.reserve(run.transfers.size());
  std::map<std::tuple<uint32_t, uint64_t, int32_t, int32_t>, size_t> index;  // (comm, op index, src, dst)
  for (size_t i = 0; i < run.transfers.size(); ++i) {
    const P2pTransfer& t = run.transfers[i];
    times.push_back(transferNs(t));
    if (NamePool::isCallPiece(t.func)) index.emplace(std::make_tuple(t.comm, t.op_index, t.send.comm_rank, t.recv.comm_rank), i);
  }
  for (const P2pCall& call : p2pCalls(run)) {
    const uint64_t ns = transferNs(call);
    for (const P2pCall::Piece& p : call.pieces) {
      const auto it = index.find({call.comm, p.op_index, p.src, p.dst});
      if (it != index.end()) times[it->second] = ns;
    }
  }
  return times;
}

}  // namespace commtrace::report
