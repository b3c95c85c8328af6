// The rank's GPU as CUPTI would report it: its compute kernels (the scenario's compute
// phases) and one NCCL kernel per launched plan, handed to the driver's libcupti
// (driver_cupti.h) at the times the timeline gives them, on CUPTI's clock (cuptiTime). The
// plugin's records carry the same ops on the GPU's clock (pTimers), which is how a reader
// ties the two clocks together.
//
// Active only when COMMTRACE_CUPTI_LIB names a library with the driver's entry points
// (the launcher sets it to libcommtrace-driver-cupti.so); otherwise every call is a no-op.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "tools/nccl-driver/timing_model.h"

namespace commtrace::driver {

class GpuActivity {
 public:
  GpuActivity(const Scenario& scenario, const Timeline& timeline, int rank);

  // The player plays sim_ns now, time_scale real seconds per simulated one from here on:
  // CUPTI's clock (cuptiGetTimestamp) follows, as a GPU's follows the work it runs.
  void pace(uint64_t sim_ns, double time_scale);
  // The compute kernels that ended by sim_ns (the player is about to issue there); all of
  // them at the end of the run.
  void computeUntil(uint64_t sim_ns);
  void computeAll() { computeUntil(UINT64_MAX); }
  // The kernel NCCL launches for one plan (the calls of one group on one communicator).
  void ncclKernel(const std::vector<const RankCall*>& plan);

 private:
  using KernelFn = void (*)(const char*, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t);
  using PaceFn = void (*)(uint64_t, double);
  const Scenario& s_;
  const RankProgram& program_;
  const int node_;
  const uint32_t device_;
  KernelFn kernel_ = nullptr;
  PaceFn pace_ = nullptr;
  std::mutex mutex_;  // plans launch from the user and the host-callback threads
  size_t next_compute_ = 0;
  uint32_t correlation_ = 0;
};

}  // namespace commtrace::driver
