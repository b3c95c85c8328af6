// What the clock alignment (load/clock_align.h) found: per process, how its GPU clock maps
// onto the reference's, and how well. The report prints it as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// Per-process mapping of GPU clocks onto one timeline (reference: the lowest global rank).
struct ClockFit {
  int rank = -1;
  std::string host;
  double offset_us = 0;  // this GPU clock minus the reference at the start of the run
  double drift_ppm = 0;
  double residual_us = 0;  // RMS of anchor residuals after the fit
  uint64_t anchors = 0;    // collective completions used
  uint64_t outliers = 0;   // completions left out of the fit: more than 5 MADs (and 2 us) off it
  bool drift_fitted = false;  // false: drift_ppm held at 0 (the reference, or too short a span to tell drift from noise)
  bool aligned = false;    // false: no shared collective reaches the reference
};

struct ClockSummary {
  std::vector<ClockFit> fits;  // one per process
  double residual_us_p50 = 0;  // over all anchors
  double residual_us_max = 0;
  bool cpu_gpu_mapped = false;  // clock samples let CPU times be placed on the GPU timeline
};

}  // namespace commtrace::report
