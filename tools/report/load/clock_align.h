// Maps every process's GPU clock onto one timeline. Members of a collective leave it at
// nearly the same instant, so collective completions are anchors: per process, fit
// reference_time = slope * gpu_time + intercept against the reference process (the lowest
// global rank), through chains of shared communicators. Lateness never uses this (it
// compares durations of the same instance); the heatmap and the Perfetto export do.
//
// How: only AllReduce, AllGather and ReduceScatter completions anchor (a Broadcast or
// Reduce root may finish first). Breadth first from the reference, each round fits the
// processes best tied to those already aligned, against the mean of their aligned
// partners' completions: a uniform sample of at most 4096 anchors, least squares, then
// again without anchors beyond 5 MADs (and 2 us). Drift is fitted only where its standard
// error is below 1 ppm (else held at 0). A restart generation that shares no
// communicator with an aligned one takes the map of the process that ran on its GPU
// (same host and local rank) before the restart: the same globaltimer.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tools/report/load/archived_name.h"
#include "tools/report/load/bottom_k.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/clock_summary.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// The collective completions the alignment fits to, kept as the instances stream by: per
// communicator, the synchronizing instances whose hash of (func, seq, op index) is among the
// kept smallest (bottom-k sampling: uniform, and the same sample whatever order instances
// arrive in or shards merge in), with each member's process and GPU end. Up to 1,024
// instances a communicator, fewer for wide ones (about 262,000 member ends at most each, and
// never fewer than 64 instances): a member of a 64-rank communicator gets 1,024 anchors from it.
// Past 1,024 processes, fewer again (width_budget.h).
class AnchorSample : public JoinedOpSink {
 public:
  struct Instance {
    uint32_t comm = 0;
    NameId func = 0;
    uint64_t seq = 0;
    uint64_t op_index = 0;
    uint64_t hash = 0;
    uint32_t members = 0;  // the communicator's size
    std::vector<std::pair<int32_t, uint64_t>> ends;  // (process, GPU end) of the members that have one
    template <class Archive>
    void serialize(Archive& ar) {
      ar(comm, archived(func), seq, op_index, hash, members, ends);
    }
  };

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  void runWidth(size_t processes) override;
  void merge(const AnchorSample& other);
  // Every kept instance in the run's order (communicator, op index, seq, func name).
  std::vector<const Instance*> instances(const NamePool& names) const;
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(kept_, width_);
  }

 private:
  void keep(Instance instance);

  std::vector<BottomK<Instance>> kept_;  // per communicator
  size_t width_ = 0;                     // the run's processes, as told
};

struct ClockAlignment {
  // Per process; invalid where nothing anchors it. Absolute nanoseconds in a double: at
  // globaltimer values (~1.8e18) a result is good to about 0.5 us.
  std::vector<LinearMap> ref_from_gpu;
  ClockSummary summary;
};

ClockAlignment alignClocks(const RunModel& run, const AnchorSample& anchors);
// The same for a run held whole.
ClockAlignment alignClocks(const RunModel& run);

}  // namespace commtrace::report
