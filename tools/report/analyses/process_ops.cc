#include "tools/report/analyses/process_ops.h"

namespace commtrace::report {

std::vector<std::vector<ProcessOp>> opsByProcess(const RunModel& run) {
  std::vector<std::vector<ProcessOp>> by_process(run.processes.size());
  auto add = [&](int32_t process, uint32_t index, int32_t slot) {
    if (process >= 0 && static_cast<size_t>(process) < by_process.size()) by_process[process].push_back({index, slot});
  };
  for (uint32_t i = 0; i < run.collectives.size(); ++i) {
    const CollInstance& c = run.collectives[i];
    const MemberView* members = run.membersOf(c);
    for (uint32_t r = 0; r < c.n_members; ++r) add(members[r].process, i, static_cast<int32_t>(r));
  }
  for (uint32_t i = 0; i < run.transfers.size(); ++i) {
    add(run.transfers[i].send.process, i, ProcessOp::kSendSide);
    add(run.transfers[i].recv.process, i, ProcessOp::kRecvSide);
  }
  return by_process;
}

const MemberView& memberOf(const RunModel& run, const ProcessOp& op) {
  if (op.isCollective()) return run.membersOf(run.collectives[op.index])[op.slot];
  const P2pTransfer& t = run.transfers[op.index];
  return op.slot == ProcessOp::kSendSide ? t.send : t.recv;
}

}  // namespace commtrace::report
