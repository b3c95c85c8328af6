// `commtrace export --perfetto`: the run as a trace for the Perfetto UI (ui.perfetto.dev),
// trace_processor or chrome://tracing. One process per rank ("rank N (host)"), one track per
// CUDA stream (more where ops on a stream overlap), plus the rank's compute kernels and NVTX
// ranges when recorded; every op a slice named by its func with its fields as args, and the
// ranks' slices of one collective (or one send and its receive) joined by a flow. Times are
// on the aligned timeline (ClockAlignment), 0 at the run's earliest event, or on the rank's
// own GPU clock from its earliest event where it could not be aligned (labelled so). Written
// as it goes, in Perfetto's protobuf format or as trace-event JSON (trace_format.h), gzipped
// or not.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/report/load/clock_align.h"
#include "tools/report/output/trace_format.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// What to keep; a slice is kept when it passes every filter given.
struct ExportFilter {
  std::vector<int> ranks;                 // global ranks; empty: every rank
  std::optional<std::pair<int, int>> steps;  // first and last step (from 0), as the overlap table numbers them
  std::optional<int64_t> from_ns, to_ns;  // on the trace's timeline: slices overlapping [from, to)
  StepRule step_rule;                     // which NVTX range is a step (steps only)
};

struct PerfettoOptions {
  TraceEncoding encoding = TraceEncoding::kProtobuf;
  bool gzip = true;  // exportPerfetto only: the file gzip-compressed (about 5x smaller)
  ExportFilter filter;
};

struct PerfettoStats {
  uint64_t slices = 0;
  uint64_t ops_without_gpu_times = 0;  // not drawn: v4 point-to-point, ops cut off before they ended
  uint64_t slices_filtered_out = 0;
  uint64_t flows = 0;  // collectives and transfers drawn on two or more ranks, joined by arrows
  int tracks = 0;
  int processes = 0;  // with at least one slice kept
  int processes_not_aligned = 0;
  int processes_without_steps = 0;  // under a step filter: no steps found, nothing kept
};

PerfettoStats writePerfettoTrace(const RunModel& run, const ClockAlignment& clocks, const PerfettoOptions& options,
                                 std::ostream& out);

// Writes out_path; false (and a "commtrace:" line on err) when it cannot be written.
bool exportPerfetto(const RunModel& run, const ClockAlignment& clocks, const PerfettoOptions& options,
                    const std::string& out_path, std::ostream& err, PerfettoStats* stats = nullptr);

}  // namespace commtrace::report
