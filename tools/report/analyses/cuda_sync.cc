#include "tools/report/analyses/cuda_sync.h"

#include <algorithm>
#include <string_view>

namespace commtrace::report {
namespace {

CudaSyncStats statsOf(const SyncDurations& d) {
  return {.count = d.count, .failed = d.failed, .total_us = d.total_us, .p50_us = d.us.quantile(0.5), .max_us = d.max_us};
}

template <class Row>
void sortByTotalDescending(std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.stats.total_us > b.stats.total_us; });
}

CudaSyncCallRow callRow(std::string_view kind, const SyncCallTally& t) {
  CudaSyncCallRow row{.call = std::string(kind), .stats = statsOf(t.all), .streams = {}};
  for (const auto& [stream, durations] : t.by_stream) row.streams.push_back({stream, statsOf(durations)});
  sortByTotalDescending(row.streams);
  return row;
}

}  // namespace

std::vector<CudaSyncRow> cudaSyncWaits(const RunModel& run) {
  std::vector<CudaSyncRow> rows;
  for (size_t p = 0; p < run.processes.size() && p < run.timelines.size(); ++p) {
    const CudaSyncTally& tally = run.timelines[p].cuda_sync;
    if (tally.calls().empty()) continue;
    CudaSyncRow row{.rank = run.processes[p].rank, .host = run.processes[p].host, .blocked_us = 0, .calls = {}};
    for (const auto& [kind, calls] : tally.calls()) {
      row.calls.push_back(callRow(kind, calls));
      row.blocked_us += row.calls.back().stats.total_us;
    }
    sortByTotalDescending(row.calls);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace commtrace::report
