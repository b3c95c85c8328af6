#include "tools/report/analyses/shard_call_gate.h"

#include "tools/report/load/time_window.h"

namespace commtrace::report {

ShardCallGate::ShardCallGate(const RunModel& run, JoinedOpSink& next)
    : run_(run), next_(next), calls_([this](const P2pCall& c) { call(c); }) {}

void ShardCallGate::piece(const P2pTransfer& transfer) {
  held_.emplace(Key{transfer.comm, transfer.send.comm_rank, transfer.recv.comm_rank, transfer.op_index}, transfer);
  calls_.transfer(transfer);
}

void ShardCallGate::call(const P2pCall& c) {
  const bool ours = startedInWindow(run_, c.members);
  for (const P2pCall::Piece& p : c.pieces) {
    const auto held = held_.find(Key{c.comm, p.src, p.dst, p.op_index});
    if (held == held_.end()) continue;
    if (ours) next_.transfer(held->second);
    held_.erase(held);
  }
}

void ShardCallGate::finish() {
  calls_.finish();
  for (const auto& [key, transfer] : held_) {
    const MemberView sides[] = {transfer.send, transfer.recv};
    if (startedInWindow(run_, sides)) next_.transfer(transfer);
  }
  held_.clear();
}

}  // namespace commtrace::report
