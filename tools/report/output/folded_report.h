// `commtrace report --format folded`: the communication by NVTX path (Report::call_paths) as
// folded stacks, the input of flame-graph tools (flamegraph.pl, inferno, speedscope): one
// line per path, its ranges from the top down joined by ';', a space, and its ops' GPU time
// summed over ranks in whole microseconds. A ';' in a range's name becomes ':' and a line
// break a space, so that a name stays one frame; a name holding " / " (the path's own
// separator) reads as two.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeFolded(const Report& report, std::ostream& out);

}  // namespace commtrace::report
