// Why a straggler was late (docs/report.md), from the GPU gap before
// each op it arrived last at (from the end of its previous op to this op's start, on its own
// GPU clock), compared with its peers' gaps before the same op:
// - longer, and compute kernels fill most of the extra (CUPTI records) -> compute
// - longer and the extra idle, or the CPU enqueued the op late         -> host
// - longer, with neither kernel records nor clock samples            -> compute, less sure:
//   host-side delay is not ruled out
// - no longer: the lateness came from an earlier op                  -> network when the rank
//   is an end of a slow link, else unknown
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

struct StragglerClass {
  std::string cls;        // "compute", "host", "network", "unknown"
  double certainty = 0;   // 0..1, how directly the evidence shows the class
  std::string evidence;
};

// ranks: the flagged global ranks; links: the link verdicts of slow_links.h.
std::map<int, StragglerClass> classifyStragglers(const RunModel& run, const std::vector<int>& ranks,
                                                 const std::vector<SlowLinkRow>& links);

}  // namespace commtrace::report
