#include "tools/report/load/cuda_sync_tally.h"

#include <algorithm>
#include <array>

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
  const auto it = std::find_if(kSyncCalls.begin(), kSyncCalls.end(), [&](const SyncCall& c) { return c.entry_point == entry_point; });
  return it == kSyncCalls.end() ? nullptr : &*it;
}

constexpr uint64_t kLegacyStreamHandle = 0x1;  // cudaStreamLegacy: the same stream as 0
uint64_t canonicalStream(uint64_t stream) { return stream == kLegacyStreamHandle ? 0 : stream; }

}  // namespace

void SyncDurations::add(double call_us, bool call_failed) {
  ++count;
  failed += call_failed;
  total_us += call_us;
  max_us = std::max(max_us, call_us);
  us.add(call_us);
}

void CudaSyncTally::add(std::string_view entry_point, uint64_t stream, uint64_t cpu_start_ns, uint64_t cpu_end_ns, bool failed) {
  const SyncCall* call = syncCallOf(entry_point);
  if (call == nullptr) return;
  const double us = cpu_end_ns > cpu_start_ns ? static_cast<double>(cpu_end_ns - cpu_start_ns) / 1000.0 : 0.0;
  SyncCallTally& t = calls_[call->kind];
  t.takes_stream = call->takes_stream;
  t.all.add(us, failed);
  if (call->takes_stream) t.by_stream[canonicalStream(stream)].add(us, failed);
}

void SyncDurations::merge(const SyncDurations& other) {
  count += other.count;
  failed += other.failed;
  total_us += other.total_us;
  max_us = std::max(max_us, other.max_us);
  us.merge(other.us);
}

void CudaSyncTally::merge(const CudaSyncTally& other) {
  for (const auto& [kind, theirs] : other.calls_) {
    SyncCallTally& mine = calls_[kind];
    mine.takes_stream = theirs.takes_stream;
    mine.all.merge(theirs.all);
    for (const auto& [stream, durations] : theirs.by_stream) mine.by_stream[stream].merge(durations);
  }
}

std::string_view CudaSyncTally::kindNamed(std::string_view kind) {
  const auto it = std::find_if(kSyncCalls.begin(), kSyncCalls.end(), [&](const SyncCall& c) { return c.kind == kind; });
  return it == kSyncCalls.end() ? std::string_view{} : it->kind;
}

}  // namespace commtrace::report
