#include "tools/report/analyses/bandwidth_series.h"

#include <algorithm>

#include "core/nccl_vocab.h"
#include "tools/report/analyses/op_metrics.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {

void BandwidthSeriesTally::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  const int n = static_cast<int>(c.n_members);
  const uint64_t s = nccl::ncclTestsBytes(func, c.bytes, n);
  const uint64_t ns = transferNs(members);
  if (s == 0 || ns == 0 || members.empty() || members[0].process < 0 || members[0].gpu_end_ns == 0) return;
  Series& series = series_.try_emplace({c.comm, c.func}, fine_bins_).first->second;
  series.process = members[0].process;
  series.busbw_factor = nccl::busBwFactor(func, n);
  series.bytes.add(members[0].gpu_end_ns, static_cast<int64_t>(s));
  series.transfer_ns.add(members[0].gpu_end_ns, static_cast<int64_t>(ns));
}


void BandwidthSeriesTally::runWidth(size_t processes) {
  fine_bins_ = std::min(fine_bins_, FineBins::binsAtWidth(processes));
}

void BandwidthSeriesTally::merge(const BandwidthSeriesTally& other) {
  fine_bins_ = std::min(fine_bins_, other.fine_bins_);
  for (const auto& [key, theirs] : other.series_) {
    Series& mine = series_.try_emplace(key, fine_bins_).first->second;
    mine.process = theirs.process;
    mine.busbw_factor = theirs.busbw_factor;
    mine.bytes.merge(theirs.bytes);
    mine.transfer_ns.merge(theirs.transfer_ns);
  }
}

BandwidthSeries bandwidthSeries(const RunModel& run, const ClockAlignment& clocks, const BandwidthSeriesTally& tally) {
  BandwidthSeries out;
  std::vector<PlacedBins> placed;
  std::vector<std::pair<std::pair<uint32_t, NameId>, const BandwidthSeriesTally::Series*>> kept;
  for (const auto& [key, series] : tally.series()) {
    const LinearMap to_axis = alignedAxisOf(clocks, static_cast<size_t>(series.process));
    if (!to_axis.valid || series.bytes.empty()) continue;
    placed.push_back({&series.bytes, to_axis});
    kept.emplace_back(key, &series);
  }
  const Columns columns = columnsOver(placed);
  if (columns.n == 0) return out;
  out.axis = "aligned time";
  out.start_us = columns.start;
  out.bin_us = columns.width;
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& [key, series] = kept[i];
    std::vector<double> bytes(static_cast<size_t>(columns.n), 0.0), ns(static_cast<size_t>(columns.n), 0.0);
    std::vector<uint64_t> ops(static_cast<size_t>(columns.n), 0);
    // The two fine bins saw the same positions: their bins line up one to one.
    series->bytes.forEach([&](uint64_t x, int64_t sum, uint32_t count) {
      const size_t col = static_cast<size_t>(columns.of(placed[i].to_axis.apply(static_cast<double>(x))));
      bytes[col] += static_cast<double>(sum);
      ops[col] += count;
    });
    series->transfer_ns.forEach([&](uint64_t x, int64_t sum, uint32_t) {
      ns[static_cast<size_t>(columns.of(placed[i].to_axis.apply(static_cast<double>(x))))] += static_cast<double>(sum);
    });
    BandwidthSeriesRow row{.comm = run.comms[key.first].id, .comm_name = std::string(run.name(run.comms[key.first].name)),
                           .func = std::string(run.name(key.second)), .ops = ops, .busbw_gbs = {}};
    for (size_t col = 0; col < bytes.size(); ++col)
      row.busbw_gbs.push_back(ops[col] == 0 ? -1.0 : series->busbw_factor * bytes[col] / ns[col]);  // bytes per ns = GB/s
    out.rows.push_back(std::move(row));
  }
  return out;
}

namespace {

// The drop of series.rows[index], or row -1.
BandwidthDrop dropOf(const BandwidthSeries& series, int index) {
  const BandwidthSeriesRow& row = series.rows[static_cast<size_t>(index)];
  std::vector<size_t> cols;
  for (size_t c = 0; c < row.ops.size(); ++c)
    if (row.ops[c] != 0) cols.push_back(c);
  BandwidthDrop best;
  if (cols.size() < kMinColumns) return best;
  // Prefix sums of ops and of ops x busBw, so that every split costs the same.
  std::vector<double> weight(cols.size() + 1, 0.0), weighted(cols.size() + 1, 0.0);
  for (size_t i = 0; i < cols.size(); ++i) {
    weight[i + 1] = weight[i] + static_cast<double>(row.ops[cols[i]]);
    weighted[i + 1] = weighted[i] + static_cast<double>(row.ops[cols[i]]) * row.busbw_gbs[cols[i]];
  }
  const double total = weight.back();
  double best_fall = kMinFall;
  for (size_t k = cols.size() / 5; k <= cols.size() - cols.size() / 5; ++k) {
    if (k == 0 || k == cols.size()) continue;
    const double before = weighted[k] / weight[k], after = (weighted.back() - weighted[k]) / (total - weight[k]);
    if (after <= 0 || before / after < best_fall) continue;
    best_fall = before / after;
    best = BandwidthDrop{.row = index, .before_gbs = before, .after_gbs = after,
                         .at_us = series.bin_us * static_cast<double>(cols[k]),
                         .ops_after = static_cast<uint64_t>(total - weight[k]), .ops = static_cast<uint64_t>(total)};
  }
  return best;
}

}  // namespace

BandwidthDrop largestBandwidthDrop(const BandwidthSeries& series) {
  BandwidthDrop largest;
  for (int i = 0; i < static_cast<int>(series.rows.size()); ++i) {
    const BandwidthDrop drop = dropOf(series, i);
    if (drop.row >= 0 && (largest.row < 0 || drop.before_gbs / drop.after_gbs > largest.before_gbs / largest.after_gbs))
      largest = drop;
  }
  return largest;
}

}  // namespace commtrace::report
