// The HTML page's charts, each an HTML fragment (its caption and its inline SVG), built
// from the Report's rows: the sections (report_sections.cc) say where each goes.
#pragma once

#include <string>
#include <vector>

#include "tools/report/report.h"

namespace commtrace::report::charts {

// Bytes between rank pairs over the whole run, from its sparse cells (consecutive ranks
// share a cell past 128 ranks).
std::string matrixChart(const CommMatrix& matrix);
// Each rank's mean lateness per bin of the aligned timeline (or of op order).
std::string latenessChart(const LatenessHeatmap& heatmap);
// busBw of each (communicator, func) per column of the aligned timeline: when one got slow.
std::string bandwidthSeriesChart(const BandwidthSeries& series);
// One plot per func: busBw against the nccl-tests message size, one series per communicator.
std::string bandwidthPlots(const std::vector<BandwidthRow>& rows);
// Where each rank's GPU time went, exposed communication per step, and the rank with the
// most exposed communication step by step and in its worst step ("" without compute records).
std::string overlapCharts(const std::vector<OverlapRow>& rows);
// The communication by NVTX path as an icicle: its exposed time where every path's is known,
// else its whole time.
std::string callPathChart(const std::vector<CallPathRow>& rows);
// The sampled call stacks' ops as an icicle, the outermost frames at the top.
std::string callStackChart(const std::vector<CallStackRow>& rows);

}  // namespace commtrace::report::charts
