// `commtrace report --format folded`: the communication by NVTX path (Report::call_paths) as
// folded stacks, the input of flame-graph tools (flamegraph.pl, inferno, speedscope): one
// line per path, its ranges from the top down joined by ';', a space, and its ops' exposed
// communication time summed over ranks in whole microseconds (foldedMeasure: their whole GPU
// time where the exposure of some path is not known). A ';' in a range's name becomes ':' and a line
// break a space, so that a name stays one frame; a name holding " / " (the path's own
// separator) reads as two.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeFolded(const Report& report, std::ostream& out);

// `--format folded-stacks`: the sampled native call stacks (Report::call_stacks) likewise, one
// line per stack, its frames from the outermost in, and the ops issued from it (estimated
// from the samples, summed over ranks).
void writeFoldedStacks(const Report& report, std::ostream& out);

// What the values are: "exposed communication" or "communication" (see above).
const char* foldedMeasure(const Report& report);

}  // namespace commtrace::report
