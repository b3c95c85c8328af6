// Pipeline bubbles from the point-to-point side: which rank waited on which in its sends and
// receives (Send/Recv pairs, as pipeline stages exchange activations and gradients), how
// long, and how much of its step that is. A transfer ends on both sides together, so the
// side whose kernel ran longer waited that much longer for the other to arrive.
#pragma once

#include <map>
#include <span>
#include <utility>
#include <vector>

#include "tools/report/analyses/overlap_rows.h"
#include "tools/report/analyses/peer_waits_rows.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// The waits summed per (waiting process, peer process) as the transfers stream by: plain
// sends only (AlltoAll/Gather/Scatter pieces wait on the slowest of many peers), both sides
// recorded with GPU times.
class PeerWaitTally : public JoinedOpSink {
 public:
  struct Sums {
    uint64_t transfers = 0;
    uint64_t waited = 0;  // transfers in which it waited at all
    uint64_t wait_ns = 0;
    bool operator==(const Sums&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(transfers, waited, wait_ns);
    }
  };

  void collective(const CollInstance&, std::span<const MemberView>) override {}
  void transfer(const P2pTransfer& transfer) override;
  // Adds another tally of the same run: a shard's.
  void merge(const PeerWaitTally& other);

  const std::map<std::pair<int32_t, int32_t>, Sums>& pairs() const { return pairs_; }
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(pairs_);
  }

 private:
  void note(int32_t waiter, int32_t peer, uint64_t wait_ns);

  std::map<std::pair<int32_t, int32_t>, Sums> pairs_;  // (waiter, peer) process indices
};

// overlap: the overlap rows of the same run, for each rank's steps.
std::vector<PeerWaitRow> peerWaits(const RunModel& run, const PeerWaitTally& waits, const std::vector<OverlapRow>& overlap);
// The same for a run held whole.
std::vector<PeerWaitRow> peerWaits(const RunModel& run, const std::vector<OverlapRow>& overlap);

}  // namespace commtrace::report
