// Which GPU activity took the time, per rank and over the run: the kernels by total time and
// count (HTA's first use case), and each rank's time by kernel type. From the per-process
// tallies the loader keeps (ProcessTimeline::kernels), so its cost does not grow with the
// number of kernels.
#pragma once

#include <cstdint>
#include <string_view>

#include "tools/report/analyses/kernel_breakdown_rows.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// HTA's kernel type of one activity name: "communication" (NCCL's kernels), "memory"
// (memcpys, memsets), else "computation".
std::string_view kernelType(std::string_view name, uint8_t activity);

// top: the `top` names with most total time over all ranks; per_rank: each rank's `top` by
// total time; per_rank_by_count: each rank's `top` by count.
KernelBreakdown kernelBreakdown(const RunModel& run, size_t top = 10);

}  // namespace commtrace::report
