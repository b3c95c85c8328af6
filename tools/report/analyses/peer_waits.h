// Pipeline bubbles from the point-to-point side: which rank waited on which in its sends and
// receives (Send/Recv pairs, as pipeline stages exchange activations and gradients), how
// long, and how much of its step that is. A transfer ends on both sides together, so the
// side whose kernel ran longer waited that much longer for the other to arrive.
#pragma once

#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// overlap: the overlap rows of the same run, for each rank's steps.
std::vector<PeerWaitRow> peerWaits(const RunModel& run, const std::vector<OverlapRow>& overlap);

}  // namespace commtrace::report
