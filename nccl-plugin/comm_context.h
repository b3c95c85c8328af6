// One per communicator: what init learnt, and the counters that give every op an index the
// same on all ranks (collectives: in issue order per communicator; sends and receives: in
// issue order per peer and direction, so the k-th send from A to B meets the k-th receive
// on B from A).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace commtrace::plugin {

struct CommContext {
  CommContext(uint64_t id, int n_ranks_in, int rank_in)
      : comm_id(id),
        n_ranks(n_ranks_in > 0 ? n_ranks_in : 0),
        rank(rank_in),
        p2p_ops(new std::atomic<uint64_t>[2 * static_cast<size_t>(n_ranks)]()) {}

  std::atomic<uint64_t>& p2pCounter(bool is_recv, int peer) {
    if (peer < 0 || peer >= n_ranks) return p2p_ops_unknown_peer;
    return p2p_ops[(is_recv ? n_ranks : 0) + peer];
  }

  const uint64_t comm_id;
  const int n_ranks;
  const int rank;
  uint64_t expect_kernel_ch = 0;  // nonzero when KernelCh is in the mask we set
  std::atomic<uint64_t> coll_ops{0};
  std::unique_ptr<std::atomic<uint64_t>[]> p2p_ops;
  std::atomic<uint64_t> p2p_ops_unknown_peer{0};
};

}  // namespace commtrace::plugin
