// `commtrace export --perfetto`: the run as a Chrome trace-event JSON file, which the
// Perfetto UI (ui.perfetto.dev) and chrome://tracing open. One process per rank ("rank N
// (host)"), one track per CUDA stream (more where ops on a stream overlap), plus the rank's
// compute kernels and NVTX ranges when recorded; every op a slice named by its func with its
// fields as args. Times are microseconds on the aligned timeline (ClockAlignment), or on
// the rank's own GPU clock from its first op where it could not be aligned (labelled so).
// Written as it goes: no document is built in memory.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tools/report/load/clock_align.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

struct PerfettoStats {
  uint64_t slices = 0;
  uint64_t ops_without_gpu_times = 0;  // not drawn: v4 point-to-point, ops cut off before they ended
  int tracks = 0;
  int processes_not_aligned = 0;
};

PerfettoStats writePerfettoTrace(const RunModel& run, const ClockAlignment& clocks, std::ostream& out);

// Writes out_path; false (and a "commtrace:" line on err) when it cannot be written.
bool exportPerfetto(const RunModel& run, const ClockAlignment& clocks, const std::string& out_path, std::ostream& err,
                    PerfettoStats* stats = nullptr);

}  // namespace commtrace::report
