#include "tools/report/analyses/cuda_sync.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "tools/report/analyses/stats.h"

namespace commtrace::report {
namespace {

struct SyncCall {
  std::string_view entry_point;
  std::string_view kind;  // the row it counts in
  bool takes_stream;
};

constexpr std::array<SyncCall, 6> kSyncCalls{{
    {"cudaStreamSynchronize", "cudaStreamSynchronize", true},
    {"cudaStreamSynchronize_ptsz", "cudaStreamSynchronize", true},
    {"cudaDeviceSynchronize", "cudaDeviceSynchronize", false},
    {"cudaEventSynchronize", "cudaEventSynchronize", false},
    {"cudaStreamWaitEvent", "cudaStreamWaitEvent", true},
    {"cudaStreamWaitEvent_ptsz", "cudaStreamWaitEvent", true},
}};

const SyncCall* syncCallOf(std::string_view entry_point) {
  const auto it = std::find_if(kSyncCalls.begin(), kSyncCalls.end(),
                               [&](const SyncCall& c) { return c.entry_point == entry_point; });
  return it == kSyncCalls.end() ? nullptr : &*it;
}

constexpr uint64_t kLegacyStreamHandle = 0x1;  // cudaStreamLegacy: the same stream as 0
uint64_t canonicalStream(uint64_t stream) { return stream == kLegacyStreamHandle ? 0 : stream; }

// The calls that fall into one row.
struct Durations {
  std::vector<double> us;
  uint64_t failed = 0;

  void add(const CudaCallSpan& c) {
    us.push_back(c.cpu_end_ns > c.cpu_start_ns ? static_cast<double>(c.cpu_end_ns - c.cpu_start_ns) / 1000.0 : 0.0);
    failed += c.result != 0;
  }
  CudaSyncStats stats() {
    CudaSyncStats s{.count = us.size(), .failed = failed};
    for (double d : us) {
      s.total_us += d;
      s.max_us = std::max(s.max_us, d);
    }
    s.p50_us = percentile(us, 0.5);
    return s;
  }
};

struct CallDurations {
  bool takes_stream = false;
  Durations all;
  std::map<uint64_t, Durations> by_stream;
};

template <class Row>
void sortByTotalDescending(std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.stats.total_us > b.stats.total_us; });
}

CudaSyncCallRow callRow(std::string_view kind, CallDurations& d) {
  CudaSyncCallRow row{.call = std::string(kind), .stats = d.all.stats(), .streams = {}};
  if (d.takes_stream) {
    for (auto& [stream, durations] : d.by_stream) row.streams.push_back({stream, durations.stats()});
    sortByTotalDescending(row.streams);
  }
  return row;
}

}  // namespace

std::vector<CudaSyncRow> cudaSyncWaits(const RunModel& run) {
  std::vector<CudaSyncRow> rows;
  for (size_t p = 0; p < run.processes.size() && p < run.timelines.size(); ++p) {
    std::map<std::string_view, CallDurations> by_kind;
    for (const CudaCallSpan& span : run.timelines[p].cuda_calls) {
      const SyncCall* call = syncCallOf(run.name(span.name));
      if (call == nullptr || !run.window.contains(run.processes[p].utcOfCpu(span.cpu_start_ns))) continue;
      CallDurations& d = by_kind[call->kind];
      d.takes_stream = call->takes_stream;
      d.all.add(span);
      if (call->takes_stream) d.by_stream[canonicalStream(span.stream)].add(span);
    }
    if (by_kind.empty()) continue;
    CudaSyncRow row{.rank = run.processes[p].rank, .host = run.processes[p].host, .blocked_us = 0, .calls = {}};
    for (auto& [kind, durations] : by_kind) {
      row.calls.push_back(callRow(kind, durations));
      row.blocked_us += row.calls.back().stats.total_us;
    }
    sortByTotalDescending(row.calls);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace commtrace::report
