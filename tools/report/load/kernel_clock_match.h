// CUPTI's clock against the GPU's (NCCL's pTimers), from what both saw: NCCL's own kernels.
// CUPTI reports each NCCL kernel on its clock (the host's CLOCK_REALTIME, interpolated); the
// plugin times the ops that kernel ran on the GPU's globaltimer; the kernel ends when its
// last op does. So each NCCL kernel's end, matched to the op end nearest it under the
// clocks' offset, is one simultaneous reading of both clocks. No GPU-side reading is needed.
//
// The offset is found by trying the differences between the first kernels' and the first
// ops' ends and keeping the one most kernels agree with; matching then follows it through the
// run, so drift (tens of ppm) does not lose the match on long runs.
//
// Both are matched as the file is read (KernelClockMatcher), in memory that does not grow
// with the run: op ends are held from a little before the kernel being matched to the
// latest read, kernels until the ops around them have been read (CUPTI hands its buffers
// over later than the plugin's records come), and of the pairs a sample spread evenly over
// the run (at most kKeptPairs) for the fit.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "tools/report/load/reorder_buffer.h"

namespace commtrace::report {

struct KernelClockMatch {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;  // (CUPTI ns, GPU ns), by CUPTI time: every kept one
  uint64_t kernels = 0;                              // NCCL kernels offered
  uint64_t matched = 0;                              // of them matched to an op (pairs holds a sample)
};

class KernelClockMatcher {
 public:
  static constexpr size_t kOpEndsBeforeKernels = 2048;  // the latest held while no NCCL kernel has come
  static constexpr size_t kFewestOpEndsBeforeKernels = 128;  // in a wide run (width_budget.h)
  static constexpr size_t kKeptPairs = 4096;

  // Until the first NCCL kernel comes only the latest op_ends_before_kernels op ends are held
  // (CUPTI may never be attached, or never see NCCL's kernels); from then on, those its
  // first kernels may match.
  explicit KernelClockMatcher(size_t op_ends_before_kernels = kOpEndsBeforeKernels);
  void addOpEnd(uint64_t gpu_end_ns);           // in file order
  void addKernelEnd(uint64_t cupti_end_ns);     // in file order
  KernelClockMatch finish();

 private:
  using Order = ReorderBuffer<uint64_t, bool (*)(const uint64_t&, const uint64_t&)>;
  void probe();
  void releaseOp(uint64_t end);
  void releaseKernel(uint64_t end);
  void matchReady(bool at_end);
  void keep(uint64_t kernel, uint64_t op);

  size_t probe_ring_;  // op ends held while no kernel has come
  bool probed_ = false;
  std::vector<uint64_t> probe_kernels_, probe_ops_;  // held until the offset is chosen
  size_t probe_next_ = 0;  // the ring slot of probe_ops_ the next op end takes while no kernel has come
  Order op_order_, kernel_order_;
  // Made once the offset is chosen: a run without CUPTI never needs it, and two empty deques
  // are 1.2 KB a process (19 MB of a 16,384-rank report).
  struct Window {
    std::deque<uint64_t> ops;      // op ends in order: the window kernels are matched in
    std::deque<uint64_t> kernels;  // kernel ends in order, waiting for the ops around them
  };
  std::unique_ptr<Window> window_;
  uint64_t op_frontier_ = 0;      // every op end before it is in ops_
  int64_t offset_ = 0;
  uint64_t last_matched_ = 0;
  size_t stride_ = 1;             // every stride_-th pair is kept
  KernelClockMatch out_;
};

// The same over all of both at once: nccl_kernel_ends, CUPTI end times of NCCL's kernels;
// op_ends, GPU end times of the ops the plugin recorded in the same process; either in any order.
KernelClockMatch matchNcclKernels(std::vector<uint64_t> nccl_kernel_ends, std::vector<uint64_t> op_ends);

}  // namespace commtrace::report
