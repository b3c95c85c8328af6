// Maps every process's GPU clock onto one timeline. Members of a collective leave it at
// nearly the same instant, so collective completions are anchors: per process, fit
// reference_time = slope * gpu_time + intercept against the reference process (the lowest
// global rank), through chains of shared communicators. Lateness never uses this (it
// compares durations of the same instance); the heatmap and the Perfetto export do.
//
// How: only AllReduce, AllGather and ReduceScatter completions anchor (a Broadcast or
// Reduce root may finish first). Breadth first from the reference, each round fits the
// processes best tied to those already aligned, against the mean of their aligned
// partners' completions: a uniform sample of at most 4096 anchors, least squares, then
// again without anchors beyond 5 MADs (and 2 us). Drift is fitted only where its standard
// error is below 1 ppm (else held at 0). A restart generation that shares no
// communicator with an aligned one takes the map of the process that ran on its GPU
// (same host and local rank) before the restart: the same globaltimer.
#pragma once

#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

struct ClockAlignment {
  // Per process; invalid where nothing anchors it. Absolute nanoseconds in a double: at
  // globaltimer values (~1.8e18) a result is good to about 0.5 us.
  std::vector<LinearMap> ref_from_gpu;
  ClockSummary summary;
};

ClockAlignment alignClocks(const RunModel& run);

}  // namespace commtrace::report
