// Every process's own ops, found in one pass over the run: the overlap analysis and the
// Perfetto export both walk the run one process at a time, and the run keeps its ops by
// instance (members of all ranks side by side), not by process.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A process's part in one op: a collective member (slot = its comm rank) or one side of a
// point-to-point transfer.
struct ProcessOp {
  static constexpr int32_t kSendSide = -1;
  static constexpr int32_t kRecvSide = -2;
  uint32_t index = 0;  // into RunModel::collectives (slot >= 0) or RunModel::transfers
  int32_t slot = 0;
  bool isCollective() const { return slot >= 0; }
};

// [process] -> its ops, in the run's order (by communicator and op index, not by time).
std::vector<std::vector<ProcessOp>> opsByProcess(const RunModel& run);

// The process's record of the op.
const MemberView& memberOf(const RunModel& run, const ProcessOp& op);

}  // namespace commtrace::report
