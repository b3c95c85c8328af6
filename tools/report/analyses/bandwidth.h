// The bandwidth table: per (communicator, func, power-of-two bucket of nccl-tests' S,
// algorithm, protocol), the instances' transfer times and nccl-tests' algBw and busBw.
#pragma once

#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// Collectives use the factor table of op_metrics.h. Point-to-point transfers (a Send and
// its Recv, or one piece of an AlltoAll/Gather/Scatter, labelled by that API func) get one
// row group of their own per func with S = the transfer's bytes and busBw = algBw: the
// records do not tie the pieces of one AlltoAll call together, so the call's (n-1)/n
// factor cannot be applied, and a piece's time includes waiting for the call's other ranks.
std::vector<BandwidthRow> bandwidthTable(const RunModel& run);

}  // namespace commtrace::report
