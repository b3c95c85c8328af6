#include "tools/report/load/time_window.h"

#include <algorithm>

namespace commtrace::report {
namespace {

constexpr int64_t kDayNs = 86'400'000'000'000;

}  // namespace

uint64_t resolveTimePoint(const TimePoint& point, uint64_t run_start_utc_ns) {
  switch (point.kind) {
    case TimePoint::Kind::kUnset:
    case TimePoint::Kind::kStep: return 0;
    case TimePoint::Kind::kSinceStart: return run_start_utc_ns + static_cast<uint64_t>(point.ns);
    case TimePoint::Kind::kUtc: return static_cast<uint64_t>(point.ns);
    case TimePoint::Kind::kTimeOfDay: {
      // On the day that puts it nearest the run's start: a second before the start is that
      // day (it read as the next day, and the window held nothing), 00:10 in a run started
      // at 23:50 the next.
      const uint64_t midnight = run_start_utc_ns - run_start_utc_ns % kDayNs;
      const int64_t at = static_cast<int64_t>(midnight) + point.ns;
      const int64_t start = static_cast<int64_t>(run_start_utc_ns);
      if (at - start > kDayNs / 2 && at >= kDayNs) return static_cast<uint64_t>(at - kDayNs);
      return static_cast<uint64_t>(start - at > kDayNs / 2 ? at + kDayNs : at);
    }
  }
  return 0;
}

TimeWindow resolveWindow(const TimeWindowSpec& spec, uint64_t run_start_utc_ns) {
  TimeWindow w;
  if (spec.from.kind != TimePoint::Kind::kUnset) w.from_utc_ns = resolveTimePoint(spec.from, run_start_utc_ns);
  if (spec.to.kind != TimePoint::Kind::kUnset) w.to_utc_ns = resolveTimePoint(spec.to, run_start_utc_ns);
  return w;
}

// An op's time is when its earliest member entered the NCCL call: the op as the job issued it.
bool startedInWindow(const RunModel& run, std::span<const MemberView> members) {
  uint64_t earliest = UINT64_MAX;
  for (const MemberView& m : members) {
    if (m.process < 0 || m.cpu_start_ns == 0 || static_cast<size_t>(m.process) >= run.processes.size()) continue;
    earliest = std::min(earliest, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
  }
  const TimeWindow& w = run.window;
  if (earliest == UINT64_MAX) return w.sharded() && w.shard + 1 == w.shards;
  return w.contains(earliest);
}

bool TimeWindowFilter::inside(std::span<const MemberView> members) {
  const bool in = startedInWindow(run_, members);
  if (!in && !run_.window.sharded()) ++run_.ops_outside_window;  // a shard's outsiders are the other shards'
  return in;
}

void TimeWindowFilter::firstGapsCleared(MemberView& m) {
  if (m.process < 0 || m.gpuDuration() == 0 || run_.window.sharded()) return;
  if (seen_.size() <= static_cast<size_t>(m.process)) seen_.resize(static_cast<size_t>(m.process) + 1, 0);
  if (seen_[static_cast<size_t>(m.process)] == 0) m.gpu_gap_ns = MemberView::kNoGap;
  seen_[static_cast<size_t>(m.process)] = 1;
}

void TimeWindowFilter::collective(const CollInstance& instance, std::span<const MemberView> members) {
  if (!inside(members)) return;
  members_.assign(members.begin(), members.end());
  for (MemberView& m : members_) firstGapsCleared(m);
  next_.collective(instance, members_);
}

void TimeWindowFilter::transfer(const P2pTransfer& transfer) {
  const MemberView sides[] = {transfer.send, transfer.recv};
  const bool call_piece_of_a_shard = run_.window.sharded() && NamePool::isCallPiece(transfer.func);
  if (!call_piece_of_a_shard && !inside(sides)) return;
  P2pTransfer t = transfer;
  firstGapsCleared(t.send);
  firstGapsCleared(t.recv);
  next_.transfer(t);
}

}  // namespace commtrace::report
