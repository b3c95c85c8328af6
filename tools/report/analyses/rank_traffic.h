// Traffic per rank: what each rank's collectives and transfers moved, tallied as the ops
// stream by (O(processes), no per-op state), so that an uneven share (one rank sending
// twice the median, as a skewed MoE routing makes it) shows.
#pragma once

#include <span>
#include <vector>

#include "tools/report/analyses/rank_traffic_rows.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class RankTrafficTally : public JoinedOpSink {
 public:
  struct Sums {
    uint64_t collectives = 0, coll_bytes = 0;
    uint64_t sends = 0, sent_bytes = 0;
    uint64_t receives = 0, received_bytes = 0;
    Sums& operator+=(const Sums& other);
    bool operator==(const Sums&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(collectives, coll_bytes, sends, sent_bytes, receives, received_bytes);
    }
  };

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  // Adds another tally of the same run: a shard's.
  void merge(const RankTrafficTally& other);

  const std::vector<Sums>& byProcess() const { return by_process_; }
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(by_process_);
  }

 private:
  Sums& of(int32_t process);

  std::vector<Sums> by_process_;  // by RunModel process index
};

// One row per known global rank (a restarted rank's processes summed), most bytes first.
std::vector<RankTrafficRow> rankTraffic(const RunModel& run, const RankTrafficTally& tally);

}  // namespace commtrace::report
