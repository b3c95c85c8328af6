// Point-to-point transfers summed as they stream by, per (communicator, func, sender,
// receiver): what the communication matrix and the slow-link analysis take from them, so
// that a pipeline- or expert-parallel run's transfers are never held. The transfers'
// counterpart of coll_shapes.h.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <span>

#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Ops that move less than this over a pair are latency-bound and say nothing about the
// link's bandwidth (a 4-byte AllReduce, the pieces of a small AlltoAll).
constexpr uint64_t kMinLinkBytes = 1 << 20;

class TransferCellTally : public JoinedOpSink {
 public:
  struct Cell {
    uint32_t comm = 0;
    NameId func = 0;
    int32_t src = 0, dst = 0;  // comm ranks
    auto operator<=>(const Cell&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(comm, archived(func), src, dst);
    }
  };
  // A transfer's time is its own (op_metrics.h), but a piece of an AlltoAll, Gather or
  // Scatter call takes its call's in the sums the matrix reads (its own span includes
  // waiting for the call's other ranks): those come from call(). The link figures take each
  // transfer's own.
  struct Sums {
    uint64_t unsized = 0;      // transfers of unrecorded size (in no sum below)
    uint64_t bytes = 0;
    uint64_t timed_bytes = 0;  // of the transfers that had a transfer time
    uint64_t time_ns = 0;
    uint64_t link_ops = 0;     // timed transfers of at least kMinLinkBytes
    double best_gbs = 0;       // the fastest of those
    void merge(const Sums& other);
    bool operator==(const Sums&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(unsized, bytes, timed_bytes, time_ns, link_ops, best_gbs);
    }
  };

  void collective(const CollInstance&, std::span<const MemberView>) override {}
  void transfer(const P2pTransfer& transfer) override;
  // A call's pieces, as P2pCallJoiner hands the call on, before finish().
  void call(const P2pCall& call);
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const TransferCellTally& other);

  const std::map<Cell, Sums>& cells() const { return cells_; }
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(cells_);
  }

 private:
  std::map<Cell, Sums> cells_;
};

// The transfers of a run held whole, summed by cell.
TransferCellTally transferCells(const RunModel& run);

}  // namespace commtrace::report
