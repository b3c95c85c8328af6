// The Chrome trace-event JSON spelling of an export: what chrome://tracing and older tools
// read (the Perfetto UI reads it too). Every slice an "X" event with its args, processes and
// tracks "M" metadata events, times in microseconds with nanosecond decimals. Flows are not
// written: the protobuf spelling has them.
#pragma once

#include <memory>
#include <ostream>

#include "tools/report/output/trace_format.h"

namespace commtrace::report {

std::unique_ptr<TraceFormat> makeJsonTraceFormat(std::ostream& out);

}  // namespace commtrace::report
