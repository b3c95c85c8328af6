// The workload's parallelism, recognised from its communicators and what each ran: which
// functions, how often per step, at what sizes, inside a host or across hosts. A communicator
// can show several patterns (a tensor-parallel group that also runs the experts' AlltoAll).
// Communicators of one shape (the groups of a parallel dimension) are one row.
#pragma once

#include <vector>

#include "tools/report/analyses/bandwidth_rows.h"
#include "tools/report/analyses/parallelism_rows.h"
#include "tools/report/load/run_summary_rows.h"

namespace commtrace::report {

// steps: the job's steps (the median rank's count), counts are said per step when >= 2.
// ranks: the job's ranks (a communicator of all of them is the data-parallel world).
std::vector<ParallelismRow> recognizeParallelism(const std::vector<CommunicatorRow>& comms, const std::vector<BandwidthRow>& bandwidth,
                                                 double steps, int ranks);

}  // namespace commtrace::report
