// Where each process's CPU waited for its GPU: the CUDA runtime's synchronisation calls the
// preload face times (interpose/cuda_wrappers.cc), per call kind and per stream, from the
// process's CudaCallSpans. A call's time is the CPU time inside it; cudaStreamWaitEvent
// makes a stream wait, not the CPU, so its time is only the enqueue.
//
// A _ptsz entry point (programs built with --default-stream per-thread) counts as its plain
// twin: the stream tells them apart, since its null stream is recorded as the per-thread
// default stream (2). cudaStreamLegacy (1) is the legacy default stream, counted as 0.
#pragma once

#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// One row per process with at least one sync call, in process order.
std::vector<CudaSyncRow> cudaSyncWaits(const RunModel& run);

}  // namespace commtrace::report
