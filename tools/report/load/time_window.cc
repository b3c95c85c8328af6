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
uint64_t startedUtc(const RunModel& run, std::span<const MemberView> members) {
  uint64_t earliest = UINT64_MAX;
  for (const MemberView& m : members) {
    if (m.process < 0 || m.cpu_start_ns == 0 || static_cast<size_t>(m.process) >= run.processes.size()) continue;
    earliest = std::min(earliest, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
  }
  return earliest;
}

bool startedInWindow(const RunModel& run, std::span<const MemberView> members) {
  const uint64_t earliest = startedUtc(run, members);
  const TimeWindow& w = run.window;
  if (earliest == UINT64_MAX) return w.sharded() && w.shard + 1 == w.shards;
  return w.contains(earliest);
}

bool TimeWindowFilter::inside(std::span<const MemberView> members) {
  const bool in = startedInWindow(run_, members);
  if (!in && !run_.window.sharded()) ++run_.ops_outside_window;  // a shard's outsiders are the other shards'
  return in;
}

TimeWindowFilter::Process& TimeWindowFilter::of(int32_t process) {
  if (processes_.size() <= static_cast<size_t>(process)) processes_.resize(static_cast<size_t>(process) + 1);
  return processes_[static_cast<size_t>(process)];
}

void TimeWindowFilter::leftOut(std::span<const MemberView> members) {
  if (!run_.window.sharded()) return;
  const bool before = startedUtc(run_, members) < run_.window.from_utc_ns;
  for (const MemberView& m : members) {
    if (m.process < 0 || m.gpuDuration() == 0) continue;
    Process& p = of(m.process);
    p.left_out[p.next_left_out] = {m.gpu_start_ns, m.gpu_end_ns};
    p.next_left_out = (p.next_left_out + 1) % kLeftOutKept;
    if (before) p.left_out_before_end = std::max(p.left_out_before_end, m.gpu_end_ns);
  }
}

// A window's first op of a process. In a shard, an op whose gap is measured from an op left
// out (it ended the gap before, or for a gap of 0 still ran), as the root-cause walk matches
// an op's gap to the op before it, or from before the end of an op left out as the shard's
// window began (the ops of a process near the cut, whose earlier op may be left out later:
// the walk would wait for it until its patience ran out, holding everything after).
void TimeWindowFilter::gapCleared(MemberView& m) {
  if (m.process < 0 || m.gpuDuration() == 0) return;
  Process& p = of(m.process);
  const auto measured_from = [&](const std::pair<uint64_t, uint64_t>& op) {
    return op.second != 0 && op.first < m.gpu_start_ns && (m.gpu_gap_ns == 0 ? op.second >= m.gpu_start_ns : op.second + m.gpu_gap_ns == m.gpu_start_ns);
  };
  const bool from_left_out = run_.window.sharded() ? m.gpu_gap_ns != MemberView::kNoGap &&
                                                         (m.gpu_start_ns - std::min(m.gpu_gap_ns, m.gpu_start_ns) <= p.left_out_before_end ||
                                                          std::any_of(p.left_out.begin(), p.left_out.end(), measured_from))
                                                   : !p.handed_on;
  if (from_left_out) m.gpu_gap_ns = MemberView::kNoGap;
  p.handed_on = true;
}

void TimeWindowFilter::collective(const CollInstance& instance, std::span<const MemberView> members) {
  if (!inside(members)) return leftOut(members);
  members_.assign(members.begin(), members.end());
  for (MemberView& m : members_) gapCleared(m);
  next_.collective(instance, members_);
}

void TimeWindowFilter::transfer(const P2pTransfer& transfer) {
  const MemberView sides[] = {transfer.send, transfer.recv};
  const bool call_piece_of_a_shard = run_.window.sharded() && NamePool::isCallPiece(transfer.func);
  if (!call_piece_of_a_shard && !inside(sides)) return leftOut(sides);
  P2pTransfer t = transfer;
  gapCleared(t.send);
  gapCleared(t.recv);
  next_.transfer(t);
}

}  // namespace commtrace::report
