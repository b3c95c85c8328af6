// Runs every analysis over a loaded run and ranks the findings: the one call between
// reading a run and printing it.
#pragma once

#include "tools/report/analyses/overlap.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// step_rule: which NVTX range is a step (StepRule).
Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule = {});

}  // namespace commtrace::report
