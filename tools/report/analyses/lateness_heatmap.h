// Lateness over time: per rank, the mean lateness (lateness.h) of the synchronizing
// collectives that ended in each bin of the aligned timeline. The lateness itself never uses
// the alignment; only placing an instance in a bin does.
#pragma once

#include "tools/report/load/clock_align.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

constexpr int kHeatmapBins = 100;

// An instance sits at its first aligned member's GPU end mapped onto the reference clock;
// instances of which no member is aligned are left out. With no process aligned at all,
// the axis is each communicator's op index instead, and LatenessHeatmap::axis says so.
LatenessHeatmap latenessHeatmap(const RunModel& run, const ClockAlignment& clocks);

}  // namespace commtrace::report
