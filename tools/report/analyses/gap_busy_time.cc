#include "tools/report/analyses/gap_busy_time.h"

#include <algorithm>

namespace commtrace::report {

GapBusyTime::GapBusyTime(const RunModel& run, const StragglerEvidence& evidence, const std::vector<int>& ranks)
    : queries_(run.processes.size()), longest_(run.processes.size()), followed_(run.processes.size()) {
  for (size_t p = 0; p < evidence.processes().size() && p < run.processes.size(); ++p) {
    if (std::find(ranks.begin(), ranks.end(), run.processes[p].rank) == ranks.end()) continue;
    for (const StragglerEvidence::LateArrival& late : evidence.processes()[p].sample.items()) {
      if (late.gap_ns == 0) continue;  // straggler_class measures no busy time then
      ask(p, late.gpu_start_ns, late.gap_ns);
      for (const StragglerEvidence::PeerGap& peer : late.peers) ask(static_cast<size_t>(peer.process), peer.gpu_start_ns, peer.gap_ns);
    }
  }
  for (std::vector<Query>& q : queries_) {
    std::sort(q.begin(), q.end());
    q.erase(std::unique(q.begin(), q.end(), [](const Query& a, const Query& b) { return !(a < b) && !(b < a); }), q.end());
  }
}

void GapBusyTime::ask(size_t process, uint64_t start, uint64_t gap) {
  if (process >= queries_.size() || gap == 0 || gap > start) return;
  queries_[process].push_back({start - gap, start, 0});
  longest_[process] = std::max(longest_[process], gap);
}

IntervalUnion::Observer GapBusyTime::observer(size_t process) {
  followed_[process] = 1;
  return [this, process](const GpuInterval& interval) { answer(process, interval); };
}

// The queries it reaches into start after interval.start - longest and before its end.
void GapBusyTime::answer(size_t process, const GpuInterval& interval) {
  std::vector<Query>& q = queries_[process];
  const uint64_t earliest = interval.start_ns > longest_[process] ? interval.start_ns - longest_[process] : 0;
  auto it = std::partition_point(q.begin(), q.end(), [&](const Query& x) { return x.from < earliest; });
  for (; it != q.end() && it->from < interval.end_ns; ++it) {
    const uint64_t lo = std::max(it->from, interval.start_ns), hi = std::min(it->to, interval.end_ns);
    if (hi > lo) it->busy_ns += hi - lo;
  }
}

void GapBusyTime::answerFromTimelines(const RunModel& run) {
  for (size_t p = 0; p < run.timelines.size() && p < queries_.size(); ++p) {
    const ProcessTimeline& t = run.timelines[p];
    if (!t.has_kernel_records || t.unmapped_kernels != 0) continue;
    IntervalUnion compute(observer(p));
    for (const GpuInterval& k : t.compute) compute.add(k);
    compute.endOfInput();
  }
}

std::optional<double> GapBusyTime::busyUs(size_t process, uint64_t start, uint64_t gap) const {
  if (gap == 0) return 0.0;
  if (process >= queries_.size() || followed_[process] == 0 || gap > start) return std::nullopt;
  const std::vector<Query>& q = queries_[process];
  const Query key{start - gap, start, 0};
  const auto it = std::lower_bound(q.begin(), q.end(), key);
  if (it == q.end() || it->from != key.from || it->to != key.to) return std::nullopt;  // never asked
  return static_cast<double>(it->busy_ns) / 1e3;
}

}  // namespace commtrace::report
