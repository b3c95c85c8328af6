// The bandwidth table: per (communicator, func, power-of-two bucket of nccl-tests' S,
// algorithm, protocol), the instances' transfer times and nccl-tests' algBw and busBw.
#pragma once

#include <map>
#include <vector>

#include "tools/report/analyses/bandwidth_rows.h"
#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/quantile_sketch.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Collectives use the factor table of op_metrics.h. AlltoAll, Gather and Scatter count one
// instance per call, their pieces tied together by p2p_calls.h: S = per-peer bytes x n, busBw
// = algBw x (n-1)/n as nccl-tests, over the shortest member's GPU span. Point-to-point
// transfers (a Send and its Recv) get rows of their own with S = the transfer's bytes and
// busBw = algBw.
//
// Fed op by op (op_stream.h); its memory grows with the groups, not the ops: the percentiles
// come from QuantileSketch, exact up to its kExactLimit samples per group and within its
// kRelativeError past that.
class BandwidthTally : public JoinedOpSink {
 public:
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  // An AlltoAll, Gather or Scatter call, as P2pCallJoiner hands it on (its pieces' transfers
  // count nothing themselves), before finish().
  void call(const P2pCall& call);
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const BandwidthTally& other);
  std::vector<BandwidthRow> rows(const RunModel& run) const;
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(groups_);
  }

  struct Key {
    uint32_t comm = 0;
    NameId func = 0;
    int bucket = -1;  // floor(log2(S)); -1: size unknown
    NameId algo = 0;
    NameId proto = 0;
    auto operator<=>(const Key&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(comm, archived(func), bucket, archived(algo), archived(proto));
    }
  };
  struct Samples {
    uint64_t count = 0;
    bool p2p = false;
    double busbw_factor = 1;  // the same for every op of a group: busbw = algbw x factor
    uint64_t time_total_ns = 0, time_min_ns = UINT64_MAX, time_max_ns = 0;  // exact, whatever the sketches keep
    uint8_t channels = 0;  // the most channels any of its ops ran on (0: not recorded)
    QuantileSketch sizes, times_us, algbw;
    void merge(const Samples& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(count, p2p, busbw_factor, time_total_ns, time_min_ns, time_max_ns, channels, sizes, times_us, algbw);
    }
  };

 private:
  std::map<Key, Samples> groups_;
};

// The whole run's table (the model replayed through a BandwidthTally).
std::vector<BandwidthRow> bandwidthTable(const RunModel& run);

}  // namespace commtrace::report
