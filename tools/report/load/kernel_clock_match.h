// CUPTI's clock against the GPU's (NCCL's pTimers), from what both saw: NCCL's own kernels.
// CUPTI reports each NCCL kernel on its clock (the host's CLOCK_REALTIME, interpolated); the
// plugin times the ops that kernel ran on the GPU's globaltimer; the kernel ends when its
// last op does. So each NCCL kernel's end, matched to the op end nearest it under the
// clocks' offset, is one simultaneous reading of both clocks. No GPU-side reading is needed.
//
// The offset is found by trying the differences between the first kernels' and the first
// ops' ends and keeping the one most kernels agree with; matching then follows it through the
// run, so drift (tens of ppm) does not lose the match on long runs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace commtrace::report {

struct KernelClockMatch {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;  // (CUPTI ns, GPU ns), by CUPTI time
  uint64_t kernels = 0;                              // NCCL kernels offered
};

// nccl_kernel_ends: CUPTI end times of NCCL's kernels; op_ends: GPU end times of the ops the
// plugin recorded in the same process. Both in any order.
KernelClockMatch matchNcclKernels(std::vector<uint64_t> nccl_kernel_ends, std::vector<uint64_t> op_ends);

}  // namespace commtrace::report
