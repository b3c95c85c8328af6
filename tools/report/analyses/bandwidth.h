// The bandwidth table: per (communicator, func, power-of-two bucket of nccl-tests' S,
// algorithm, protocol), the instances' transfer times and nccl-tests' algBw and busBw.
#pragma once

#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// Collectives use the factor table of op_metrics.h. AlltoAll, Gather and Scatter count one
// instance per call, their pieces tied together by p2p_calls.h: S = per-peer bytes x n, busBw
// = algBw x (n-1)/n as nccl-tests, over the shortest member's GPU span. Point-to-point
// transfers (a Send and its Recv) get rows of their own with S = the transfer's bytes and
// busBw = algBw.
std::vector<BandwidthRow> bandwidthTable(const RunModel& run);

}  // namespace commtrace::report
