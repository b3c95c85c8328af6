#include "tools/report/analyses/lateness_heatmap.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/rank_index.h"

namespace commtrace::report {
namespace {

// Where an instance sits on the heatmap's axis: aligned time in us, or its op index.
class Axis {
 public:
  Axis(const RunModel& run, const ClockAlignment& clocks) : run_(run), clocks_(clocks) {
    aligned_ = std::any_of(clocks.ref_from_gpu.begin(), clocks.ref_from_gpu.end(), [](const LinearMap& m) { return m.valid; });
  }
  bool aligned() const { return aligned_; }

  std::optional<double> positionOf(const CollInstance& c) const {
    if (!aligned_) return static_cast<double>(c.op_index);
    const MemberView* m = run_.membersOf(c);
    for (uint32_t i = 0; i < c.n_members; ++i) {
      const int32_t p = m[i].process;
      if (p < 0 || m[i].gpu_end_ns == 0 || static_cast<size_t>(p) >= clocks_.ref_from_gpu.size()) continue;
      if (const LinearMap& map = clocks_.ref_from_gpu[p]; map.valid) return map.apply(static_cast<double>(m[i].gpu_end_ns)) / 1e3;
    }
    return std::nullopt;
  }

 private:
  const RunModel& run_;
  const ClockAlignment& clocks_;
  bool aligned_ = false;
};

struct BinSums {
  std::vector<double> sum_us;
  std::vector<uint32_t> count;
};

}  // namespace

LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks) {
  const Axis axis(run, clocks);
  LatenessHeatmap map;
  map.axis = axis.aligned() ? "aligned time" : "op order";
  double lo = INFINITY, hi = -INFINITY;
  InstanceArrivals a;
  for (const CollInstance& c : run.collectives) {
    if (!arrivalsOf(run, c, a)) continue;
    if (const auto x = axis.positionOf(c)) {
      lo = std::min(lo, *x);
      hi = std::max(hi, *x);
    }
  }
  if (lo > hi) return map;
  const int bins = hi > lo ? kHeatmapBins : 1;
  const double width = hi > lo ? (hi - lo) / bins : 1.0;
  (axis.aligned() ? map.bin_us : map.bin_ops) = width;
  if (axis.aligned()) map.start_us = lo;

  std::vector<BinSums> ranks(rankSlots(run));
  for (const CollInstance& c : run.collectives) {
    if (!arrivalsOf(run, c, a)) continue;
    const auto x = axis.positionOf(c);
    if (!x) continue;
    const int bin = std::min(bins - 1, static_cast<int>((*x - lo) / width));  // the last instance: the last bin
    for (const MemberArrival& m : a.members) {
      if (m.rank < 0 || m.rank >= static_cast<int>(ranks.size())) continue;
      BinSums& r = ranks[m.rank];
      if (r.count.empty()) r.sum_us.assign(bins, 0.0), r.count.assign(bins, 0);
      r.sum_us[bin] += static_cast<double>(m.lateness_ns) / 1e3;
      ++r.count[bin];
    }
  }
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const BinSums& r = ranks[rank];
    if (r.count.empty()) continue;
    map.ranks.push_back(static_cast<int>(rank));
    std::vector<double>& row = map.mean_lateness_us.emplace_back(bins, -1.0);
    for (int b = 0; b < bins; ++b)
      if (r.count[b] != 0) row[b] = r.sum_us[b] / r.count[b];
  }
  return map;
}

}  // namespace commtrace::report
