// Where each process's CPU waited for its GPU: the CUDA runtime's synchronisation calls the
// preload face times (interpose/cuda_wrappers.cc), per call kind and per stream, from the
// tally each process's file gave as it was read (load/cuda_sync_tally.h: how entry points
// and streams are folded). A call's time is the CPU time inside it; cudaStreamWaitEvent
// makes a stream wait, not the CPU, so its time is only the enqueue. The median is exact up
// to QuantileSketch::kExactLimit distinct durations per row, within 1 % past that.
#pragma once

#include <vector>

#include "tools/report/analyses/cuda_sync_rows.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// One row per process with at least one sync call, in process order.
std::vector<CudaSyncRow> cudaSyncWaits(const RunModel& run);

}  // namespace commtrace::report
