// CPU time blocked in CUDA synchronisation (analyses/cuda_sync.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// CPU time spent inside CUDA synchronisation calls (the preload face's cuda* wrappers).
struct CudaSyncStats {
  uint64_t count = 0;   // calls
  uint64_t failed = 0;  // calls that returned an error
  double total_us = 0;
  double p50_us = 0;
  double max_us = 0;
};

struct CudaSyncStreamRow {
  uint64_t stream = 0;  // the cudaStream_t handle: 0 the legacy default stream, 2 the per-thread default stream
  CudaSyncStats stats;
};

struct CudaSyncCallRow {
  // "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize" or
  // "cudaStreamWaitEvent"; a _ptsz entry point counts as its plain twin (the stream tells them apart).
  std::string call;
  CudaSyncStats stats;
  std::vector<CudaSyncStreamRow> streams;  // calls that take a stream only; most time first
};

// One process that made CUDA sync calls.
struct CudaSyncRow {
  int rank = -1;
  std::string host;
  double blocked_us = 0;  // over all its calls
  std::vector<CudaSyncCallRow> calls;  // most time first
};

}  // namespace commtrace::report
