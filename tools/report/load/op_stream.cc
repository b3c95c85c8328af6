#include "tools/report/load/op_stream.h"

#include <algorithm>
#include <tuple>

#include "tools/report/load/gpu_gaps.h"

namespace commtrace::report {

uint64_t instanceHash(NameId func, uint64_t seq, uint64_t op_index) {
  uint64_t x = (seq * 0x9E3779B97F4A7C15ull) ^ (op_index + 0x632BE59BD9B4E019ull) ^ (uint64_t{func} << 56);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;  // splitmix64's finaliser
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

HeldGaps gapsOf(const RunModel& run) {
  HeldGaps gaps{std::vector<uint64_t>(run.members.size(), MemberView::kNoGap),
                std::vector<std::pair<uint64_t, uint64_t>>(run.transfers.size(), {MemberView::kNoGap, MemberView::kNoGap})};
  std::vector<std::vector<GapSpan>> by_process(run.processes.size());
  auto add = [&](const MemberView& m, uint64_t* gap) {
    if (m.gpuDuration() != 0 && m.process >= 0 && static_cast<size_t>(m.process) < by_process.size())
      by_process[static_cast<size_t>(m.process)].push_back({m.gpu_start_ns, m.gpu_end_ns, gap});
  };
  for (size_t i = 0; i < run.members.size(); ++i) add(run.members[i], &gaps.members[i]);
  for (size_t i = 0; i < run.transfers.size(); ++i) {
    add(run.transfers[i].send, &gaps.transfers[i].first);
    add(run.transfers[i].recv, &gaps.transfers[i].second);
  }
  for (std::vector<GapSpan>& spans : by_process) setGapsInStartOrder(spans, 0, false);
  return gaps;
}

namespace {

// When an op was issued, as the joiner would meet it: its earliest member's CPU start as UTC
// (0 where no member recorded one).
uint64_t issuedUtc(const RunModel& run, std::span<const MemberView> members) {
  uint64_t earliest = UINT64_MAX;
  for (const MemberView& m : members)
    if (m.process >= 0 && m.cpu_start_ns != 0) earliest = std::min(earliest, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
  return earliest == UINT64_MAX ? 0 : earliest;
}

}  // namespace

// In the order the ops were issued, as the loader about hands them on (an analysis that
// follows each rank's ops in order, wait_attribution.h, needs no more than that).
void replayRun(const RunModel& run, JoinedOpSink& sink) {
  if (!run.processes.empty()) sink.runWidth(run.processes.size());
  const HeldGaps gaps = gapsOf(run);
  struct Op {
    uint64_t utc;
    bool transfer;
    size_t index;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < run.collectives.size(); ++i) {
    const CollInstance& c = run.collectives[i];
    ops.push_back({issuedUtc(run, {run.membersOf(c), c.n_members}), false, i});
  }
  for (size_t i = 0; i < run.transfers.size(); ++i) {
    const MemberView sides[] = {run.transfers[i].send, run.transfers[i].recv};
    ops.push_back({issuedUtc(run, sides), true, i});
  }
  std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.utc < b.utc; });
  std::vector<MemberView> members;
  for (const Op& op : ops) {
    if (op.transfer) {
      P2pTransfer t = run.transfers[op.index];
      std::tie(t.send.gpu_gap_ns, t.recv.gpu_gap_ns) = gaps.transfers[op.index];
      sink.transfer(t);
      continue;
    }
    const CollInstance& c = run.collectives[op.index];
    members.assign(run.membersOf(c), run.membersOf(c) + c.n_members);
    for (uint32_t r = 0; r < c.n_members; ++r) members[r].gpu_gap_ns = gaps.members[c.first_member + r];
    sink.collective(c, members);
  }
  sink.finish();
}

void OpFanout::collective(const CollInstance& instance, std::span<const MemberView> members) {
  for (JoinedOpSink* sink : sinks_) sink->collective(instance, members);
}

void OpFanout::transfer(const P2pTransfer& transfer) {
  for (JoinedOpSink* sink : sinks_) sink->transfer(transfer);
}

void OpFanout::runWidth(size_t processes) {
  for (JoinedOpSink* sink : sinks_) sink->runWidth(processes);
}

void OpFanout::finish() {
  for (JoinedOpSink* sink : sinks_) sink->finish();
}

}  // namespace commtrace::report
