#include "tools/report/analyses/lateness_heatmap.h"

#include <algorithm>
#include <cmath>

#include "tools/report/analyses/rank_index.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/stats.h"
#include "tools/report/load/width_budget.h"

namespace commtrace::report {
namespace {

struct BinSums {
  std::vector<double> sum_us;
  std::vector<uint32_t> count;
};

}  // namespace

size_t FineBins::binsAtWidth(size_t processes) { return keptAtWidth(kFineBins, processes, kFewestBins); }

void FineBins::add(uint64_t x, int64_t value, uint32_t count) {
  if (sum_.empty() || x < lowest_ || x > highest_) include(x, x);
  const size_t i = static_cast<size_t>((x >> shift_) - first_);
  sum_[i] += value;
  count_[i] += count;
}

// The width is the least power of two that spans [lowest, highest] in bins_ bins, and
// the window starts at the lowest: both depend only on the positions seen, not on the order
// they came in, so two tallies of the same values bin them alike.
void FineBins::include(uint64_t lo, uint64_t hi) {
  if (sum_.empty()) {
    sum_.assign(bins_, 0);
    count_.assign(bins_, 0);
    lowest_ = lo;
    highest_ = hi;
    first_ = lo >> shift_;
  }
  lowest_ = std::min(lowest_, lo);
  highest_ = std::max(highest_, hi);
  while ((highest_ >> shift_) - (lowest_ >> shift_) >= bins_) widen();
  if ((lowest_ >> shift_) != first_) moveWindow(lowest_ >> shift_);
}

// Twice the width: bins 2k and 2k+1 become bin k.
void FineBins::widen() {
  std::vector<int64_t> sum(bins_, 0);
  std::vector<uint32_t> count(bins_, 0);
  const uint64_t new_first = first_ / 2;
  for (size_t i = 0; i < bins_; ++i) {
    const size_t to = static_cast<size_t>((first_ + i) / 2 - new_first);
    sum[to] += sum_[i];
    count[to] += count_[i];
  }
  ++shift_;
  first_ = new_first;
  sum_ = std::move(sum);
  count_ = std::move(count);
}

// Every filled bin lies in [lowest, highest], which fits the window from new_first.
void FineBins::moveWindow(uint64_t new_first) {
  std::vector<int64_t> sum(bins_, 0);
  std::vector<uint32_t> count(bins_, 0);
  for (size_t i = 0; i < bins_; ++i) {
    if (count_[i] == 0) continue;
    const size_t to = static_cast<size_t>(first_ + i - new_first);
    sum[to] = sum_[i];
    count[to] = count_[i];
  }
  first_ = new_first;
  sum_ = std::move(sum);
  count_ = std::move(count);
}

void FineBins::merge(const FineBins& other) {
  if (other.empty()) return;
  // Widths are powers of two and bins start at multiples of them: once this one is as
  // wide, each of the other's bins lies inside one of its bins.
  if (empty()) shift_ = std::max(shift_, other.shift_);
  while (shift_ < other.shift_) widen();
  include(other.lowest_, other.highest_);
  for (size_t i = 0; i < other.sum_.size(); ++i) {
    if (other.count_[i] == 0) continue;
    const size_t to = static_cast<size_t>((((other.first_ + i) << other.shift_) >> shift_) - first_);
    sum_[to] += other.sum_[i];
    count_[to] += other.count_[i];
  }
}

void LatenessBins::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  if (!arrivalsOf(func != nullptr && func->synchronizing, members, arrivals_)) return;
  for (const MemberArrival& m : arrivals_.members) {
    if (m.process < 0) continue;
    if (processes_.size() <= static_cast<size_t>(m.process)) resize(static_cast<size_t>(m.process) + 1);
    Process& p = processes_[static_cast<size_t>(m.process)];
    p.by_gpu_end.add(members[static_cast<size_t>(m.comm_rank)].gpu_end_ns, static_cast<int64_t>(m.lateness_ns));
    p.by_op_index.add(c.op_index, static_cast<int64_t>(m.lateness_ns));
  }
}

void LatenessBins::resize(size_t processes) {
  processes_.resize(processes, Process{FineBins(fine_bins_), FineBins(fine_bins_)});
}

void LatenessBins::runWidth(size_t processes) { fine_bins_ = std::min(fine_bins_, FineBins::binsAtWidth(processes)); }

void LatenessBins::merge(const LatenessBins& other) {
  fine_bins_ = std::min(fine_bins_, other.fine_bins_);
  if (processes_.size() < other.processes_.size()) resize(other.processes_.size());
  for (size_t p = 0; p < other.processes_.size(); ++p) {
    processes_[p].by_gpu_end.merge(other.processes_[p].by_gpu_end);
    processes_[p].by_op_index.merge(other.processes_[p].by_op_index);
  }
}

LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks) {
  LatenessBins bins;
  replayRun(run, bins);
  return latenessHeatmap(run, clocks, bins);
}

Columns columnsOver(std::span<const PlacedBins> placed) {
  double lo = INFINITY, hi = -INFINITY;
  for (const PlacedBins& p : placed) {
    for (uint64_t x : {p.bins->lowest(), p.bins->highest()}) {
      lo = std::min(lo, p.to_axis.apply(static_cast<double>(x)));
      hi = std::max(hi, p.to_axis.apply(static_cast<double>(x)));
    }
  }
  if (lo > hi) return {};
  return hi > lo ? Columns{lo, (hi - lo) / kHeatmapBins, kHeatmapBins} : Columns{lo, 1.0, 1};
}

LinearMap alignedAxisOf(const ClockAlignment& clocks, size_t p) {
  if (p >= clocks.ref_from_gpu.size() || !clocks.ref_from_gpu[p].valid) return {};
  return {clocks.ref_from_gpu[p].slope / 1e3, clocks.ref_from_gpu[p].intercept / 1e3, true};
}

LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks, const LatenessBins& bins) {
  const bool aligned = std::any_of(clocks.ref_from_gpu.begin(), clocks.ref_from_gpu.end(), [](const LinearMap& m) { return m.valid; });
  LatenessHeatmap map;
  map.axis = aligned ? "aligned time" : "op order";
  std::vector<PlacedBins> placed;
  std::vector<int> placed_rank;
  for (size_t p = 0; p < bins.processes().size() && p < run.processes.size(); ++p) {
    const int rank = run.processes[p].rank;
    const FineBins& fine = aligned ? bins.processes()[p].by_gpu_end : bins.processes()[p].by_op_index;
    if (rank < 0 || fine.empty()) continue;
    const LinearMap to_axis = aligned ? alignedAxisOf(clocks, p) : LinearMap{1.0, 0.0, true};
    if (!to_axis.valid) continue;
    placed.push_back({&fine, to_axis});
    placed_rank.push_back(rank);
  }
  const Columns columns = columnsOver(placed);
  if (columns.n == 0) return map;
  const int n = columns.n;
  (aligned ? map.bin_us : map.bin_ops) = columns.width;
  if (aligned) map.start_us = columns.start;

  std::vector<BinSums> ranks(rankSlots(run));
  for (size_t i = 0; i < placed.size(); ++i) {
    const PlacedBins& p = placed[i];
    if (placed_rank[i] >= static_cast<int>(ranks.size())) continue;
    BinSums& r = ranks[static_cast<size_t>(placed_rank[i])];
    if (r.count.empty()) r.sum_us.assign(n, 0.0), r.count.assign(n, 0);
    p.bins->forEach([&](uint64_t x, int64_t sum_ns, uint32_t count) {
      const int bin = columns.of(p.to_axis.apply(static_cast<double>(x)));
      r.sum_us[bin] += static_cast<double>(sum_ns) / 1e3;
      r.count[bin] += count;
    });
  }
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const BinSums& r = ranks[rank];
    if (r.count.empty()) continue;
    map.ranks.push_back(static_cast<int>(rank));
    std::vector<double>& row = map.mean_lateness_us.emplace_back(n, -1.0);
    for (int b = 0; b < n; ++b)
      if (r.count[b] != 0) row[b] = r.sum_us[b] / r.count[b];
  }
  return map;
}

namespace {

// Per column: the given rows' highest lateness above the column's median rank; -1 where they
// had no instance.
std::vector<double> excessOverMedian(const LatenessHeatmap& h, const std::vector<size_t>& rows) {
  const size_t columns = h.mean_lateness_us.empty() ? 0 : h.mean_lateness_us.front().size();
  std::vector<double> excess(columns, -1), column;
  for (size_t b = 0; b < columns; ++b) {
    column.clear();
    for (const std::vector<double>& row : h.mean_lateness_us)
      if (row[b] >= 0) column.push_back(row[b]);
    double theirs = -1;
    for (size_t r : rows) theirs = std::max(theirs, h.mean_lateness_us[r][b]);
    if (theirs >= 0) excess[b] = theirs - median(column);
  }
  return excess;
}

}  // namespace

std::vector<TimeStretch> lateStretches(const LatenessHeatmap& heatmap, std::span<const int> ranks) {
  if (heatmap.axis != "aligned time" || heatmap.bin_us <= 0) return {};
  std::vector<size_t> rows;
  for (size_t r = 0; r < heatmap.ranks.size(); ++r)
    if (std::find(ranks.begin(), ranks.end(), heatmap.ranks[r]) != ranks.end()) rows.push_back(r);
  const std::vector<double> excess = excessOverMedian(heatmap, rows);
  const double peak = excess.empty() ? 0 : *std::max_element(excess.begin(), excess.end());
  std::vector<TimeStretch> out;
  if (peak <= 0) return out;
  size_t last_late = 0;
  for (size_t b = 0; b < excess.size(); ++b) {
    if (excess[b] < peak / 2) continue;
    const double from = heatmap.bin_us * static_cast<double>(b), to = from + heatmap.bin_us;
    if (!out.empty() && b - last_late <= kStretchGapColumns) out.back().to_us = to;
    else out.push_back({from, to});
    last_late = b;
  }
  return out;
}

}  // namespace commtrace::report
