// Where in the program the communication comes from: every rank's ops tallied by the NVTX
// path open on their issuing thread (load/phase_path_tally.h), merged across ranks by path.
// The time is each op's own GPU time, and the part of it no compute kernel of its rank ran
// under (the overlap pass measures it op by op: analyses/overlap.h); ops running at once
// each count their own.
#pragma once

#include <unordered_map>
#include <vector>

#include "tools/report/analyses/call_paths_rows.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Most communication time first; empty when no op ran under an NVTX range. exposed_by_path:
// computeOverlap's, per process (empty for a process without overlap); none: not known.
// waiting_by_path: ArrivalTally::waitingByPath (path 0: ops under no range).
std::vector<CallPathRow> commByCallPath(const RunModel& run, const std::vector<std::vector<PathExposure>>& exposed_by_path = {},
                                        const std::unordered_map<NameId, PathWaiting>& waiting_by_path = {});

// Whether every row's exposure is known: then a chart of the paths shows exposed time,
// else their whole communication time (one measure for every path).
bool everyExposureKnown(const std::vector<CallPathRow>& rows);

// The path most of the exposed time came from, with every run of digits in its ranges folded
// ("forward / layers.# / attention": the layers as one, as the steps already are), summed over
// the rows it folds; its exposed_share is of its own time, and exposed_of_all of every
// path's exposed time. Empty path where exposure is not known for every row or none exposed.
struct ExposedPath {
  CallPathRow row;
  double exposed_of_all = 0;
};
ExposedPath mostExposedPath(const std::vector<CallPathRow>& rows);

}  // namespace commtrace::report
