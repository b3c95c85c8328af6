// Runs every analysis over a loaded run and ranks the findings: the one call between
// reading a run and printing it.
#pragma once

#include "tools/report/load/clock_align.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

Report buildReport(const RunModel& run, const ClockAlignment& clocks);

}  // namespace commtrace::report
