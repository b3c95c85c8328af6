// busBw over time, per communicator and func: when did a communicator get slow. Each
// collective instance's nccl-tests bytes and transfer time are summed in fine bins at its end
// on the GPU clock of the process in the communicator's first seat, and placed on the
// aligned timeline at the end, in the heatmap's kind of columns; a column's busBw is its
// summed bus bytes over its summed transfer time. Memory grows with the communicators and
// funcs, not the ops.
#pragma once

#include <map>
#include <span>
#include <utility>
#include <vector>

#include "tools/report/analyses/bandwidth_series_rows.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class BandwidthSeriesTally : public JoinedOpSink {
 public:
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  // A wide run has more communicators: fewer fine bins each (width_budget.h), as the
  // lateness heatmap's processes (at 16,384 ranks, 1,024 bins a series held about 50 MB).
  void runWidth(size_t processes) override;
  void merge(const BandwidthSeriesTally& other);

  struct Series {
    explicit Series(size_t fine_bins = FineBins::kFineBins) : bytes(fine_bins), transfer_ns(fine_bins) {}
    int process = -1;   // whose GPU clock the positions are on
    double busbw_factor = 0;
    FineBins bytes;     // nccl-tests S
    FineBins transfer_ns;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(process, busbw_factor, bytes, transfer_ns);
    }
  };
  const std::map<std::pair<uint32_t, NameId>, Series>& series() const { return series_; }  // (comm, func)
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(fine_bins_);
    archiveEntries(ar, series_, [](Archive& a, auto& key, Series& s) { a(key.first, archived(key.second), s); });
  }

 private:
  std::map<std::pair<uint32_t, NameId>, Series> series_;
  size_t fine_bins_ = FineBins::kFineBins;  // for a series first seen now
};

// Empty (with axis "not aligned") when no process's clock could be aligned.
BandwidthSeries bandwidthSeries(const RunModel& run, const ClockAlignment& clocks, const BandwidthSeriesTally& tally);

// When a series got slow: the split of its columns (each side at least a fifth of those
// with ops, and at least kMinColumns in all) with the largest fall of the ops-weighted mean
// busBw, where the part after it runs at most 1/kMinFall of the part before.
struct BandwidthDrop {
  int row = -1;  // into BandwidthSeries::rows; -1: no series fell that far
  double before_gbs = 0, after_gbs = 0;
  double at_us = 0;  // from the series' first column to the one the fall starts in
  uint64_t ops_after = 0, ops = 0;
};
inline constexpr double kMinFall = 1.5;
inline constexpr size_t kMinColumns = 10;
// The series with the largest such fall.
BandwidthDrop largestBandwidthDrop(const BandwidthSeries& series);

}  // namespace commtrace::report
