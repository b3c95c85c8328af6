// Lateness over time: per rank, the mean lateness (lateness.h) of the synchronizing
// collectives that ended in each bin of the aligned timeline. The lateness itself never uses
// the alignment; only placing an instance in a bin does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap_rows.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

constexpr int kHeatmapBins = 100;

// Sums of values at positions on one axis (a GPU clock, op indices) in kFineBins bins whose
// width, a power of two, doubles (neighbours merged) whenever the positions seen no longer
// fit: memory that does not grow with the axis's range or the number of values. Values are
// integers (ns), summed exactly: the sums are the same whatever order the values came in
// (summed as doubles, a 1,024-rank report's heatmap differed in the last digit from run to
// run, as the loader threads joined instances in another order).
class FineBins {
 public:
  static constexpr size_t kFineBins = 1024;
  static constexpr size_t kFewestBins = 256;
  // The bins for one process (or communicator) of a run this wide (width_budget.h).
  static size_t binsAtWidth(size_t processes);
  explicit FineBins(size_t bins = kFineBins) : bins_(bins) {}
  void add(uint64_t x, int64_t value, uint32_t count = 1);
  void merge(const FineBins& other);
  bool empty() const { return sum_.empty(); }
  uint64_t lowest() const { return lowest_; }    // the least and greatest position added
  uint64_t highest() const { return highest_; }
  // visit(centre, sum, count) for each non-empty bin, its centre clamped to [lowest, highest].
  template <class Archive>
  void serialize(Archive& ar) {
    ar(bins_, shift_, first_, lowest_, highest_, sum_, count_);
  }
  template <class Visit>
  void forEach(Visit visit) const {
    for (size_t i = 0; i < sum_.size(); ++i)
      if (count_[i] != 0)
        visit(std::clamp(((first_ + i) << shift_) + width() / 2, lowest_, highest_), sum_[i], count_[i]);
  }

 private:
  void include(uint64_t lo, uint64_t hi);
  void widen();
  void moveWindow(uint64_t new_first);

  uint64_t width() const { return uint64_t{1} << shift_; }

  size_t bins_;         // how many
  unsigned shift_ = 0;  // bins are 2^shift_ wide: a position's bin is a shift, not a division (two per member of every op)
  uint64_t first_ = 0;  // the first bin's index, in bins of width() from 0
  uint64_t lowest_ = 0, highest_ = 0;
  std::vector<int64_t> sum_;
  std::vector<uint32_t> count_;
};

// Fine bins of several processes placed on one axis, each through its own map, and the
// columns they are re-binned into: at most kHeatmapBins of equal width from the lowest
// placed position to the highest. A fine bin goes whole to the column its centre falls in.
struct PlacedBins {
  const FineBins* bins = nullptr;
  LinearMap to_axis;
};
struct Columns {
  double start = 0, width = 1;
  int n = 0;  // 0: nothing was placed
  int of(double x) const { return std::clamp(static_cast<int>((x - start) / width), 0, n - 1); }
};
Columns columnsOver(std::span<const PlacedBins> placed);
// Process p's own GPU clock onto the aligned timeline (the reference GPU clock) in us; invalid
// where the clock fit did not reach it.
LinearMap alignedAxisOf(const ClockAlignment& clocks, size_t p);

// Each member's lateness at its own GPU end (members stop together, so it is where the
// instance ended, to within the clocks' residual) and at the instance's op index, per
// process, kept as the instances stream by: in kFineBins bins, fewer past 1,024 processes
// (width_budget.h; sized when a process is first seen).
class LatenessBins : public JoinedOpSink {
 public:
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  void runWidth(size_t processes) override;
  void merge(const LatenessBins& other);

  struct Process {
    FineBins by_gpu_end;   // on the process's own GPU clock
    FineBins by_op_index;  // for runs whose clocks could not be aligned
    template <class Archive>
    void serialize(Archive& ar) {
      ar(by_gpu_end, by_op_index);
    }
  };
  const std::vector<Process>& processes() const { return processes_; }
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(processes_, fine_bins_);
  }

 private:
  void resize(size_t processes);

  InstanceArrivals arrivals_;  // reused from instance to instance
  std::vector<Process> processes_;
  size_t fine_bins_ = FineBins::kFineBins;  // for a process first seen now
};

// Bins of the aligned timeline: each process's fine bins mapped through its clock fit (a
// process the fit did not reach is left out); with no process aligned at all, the axis is
// each communicator's op index instead, and LatenessHeatmap::axis says so. A fine bin goes
// whole to the column its centre falls in: a fine bin is at most 1/512 of the process's span,
// a fifth of a column, so a value near a column's edge may land in its neighbour.
LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks, const LatenessBins& bins);
// The same for a run held whole.
LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks);

// When some ranks (one straggler, or a host's) were late: the stretches of the heatmap's
// columns where their lateness above the column's median rank reached half its peak (a rank
// late throughout: the whole run; late from step 20 to 40: that stretch, not the noise around
// it), as [from, to) in us from the first column. Late columns fewer than kStretchGapColumns
// apart are one stretch: a straggler is late at some collectives of each step, not at every
// column (the demo's steps are five columns long). None on the "op order" axis, or where they
// were never above the median.
constexpr size_t kStretchGapColumns = kHeatmapBins / 10;
struct TimeStretch {
  double from_us = 0, to_us = 0;
};
std::vector<TimeStretch> lateStretches(const LatenessHeatmap& heatmap, std::span<const int> ranks);

}  // namespace commtrace::report
