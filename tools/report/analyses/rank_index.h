// Who is who across a run: a communicator member's global rank and each global rank's host.
#pragma once

#include <string>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// The global rank of comm_rank in comm; -1 when unknown. (The loader already gave every seat
// a file recorded the rank that file names.)
int globalRankOf(const Communicator& comm, int comm_rank);

// Size of a dense per-global-rank table: one past the largest rank any file or
// communicator names, or the world size.
int rankSlots(const RunModel& run);

// The host of every global rank (index: rank; "" where no file names it), as its file
// names it (ProcessInfo::host).
std::vector<std::string> hostsByRank(const RunModel& run);

}  // namespace commtrace::report
