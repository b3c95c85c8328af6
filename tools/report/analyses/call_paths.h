// Where in the program the communication comes from: every rank's ops tallied by the NVTX
// path open on their issuing thread (load/phase_path_tally.h), merged across ranks by path.
// The time is each op's own GPU time: what ran, not what was exposed (overlap's table says
// that per rank, not yet per path).
#pragma once

#include <vector>

#include "tools/report/analyses/call_paths_rows.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Most communication time first; empty when no op ran under an NVTX range.
std::vector<CallPathRow> commByCallPath(const RunModel& run);

}  // namespace commtrace::report
