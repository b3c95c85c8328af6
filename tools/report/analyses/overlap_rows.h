// Compute/communication overlap per rank and step (analyses/overlap.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// One step, or on long runs a stretch of consecutive steps (see OverlapRow::steps), with
// the sums over them.
struct StepOverlap {
  int step = 0;
  int last_step = 0;    // == step for a single step
  double start_us = 0;  // of `step`, on the rank's GPU clock, relative to its first op
  double comm_us = 0;
  double overlapped_us = 0;
  double exposed_us = 0;
  double idle_us = 0;
  double compute_only_us = 0;  // compute kernels with no communication under them
};

// One step of one rank as intervals, in us from the rank's first communication kernel (as
// StepOverlap::start_us): what the HTML report draws as a timeline strip.
struct StepTimeline {
  int step = -1;  // -1: none
  double start_us = 0, end_us = 0;
  std::vector<std::pair<double, double>> comm, compute;  // unions, clipped to the step
};

struct OverlapRow {
  int rank = -1;
  bool available = false;
  std::string reason;  // why not, when !available ("no compute-kernel records: CUPTI was not attached")
  double comm_us = 0;        // union of communication kernel time
  double overlapped_us = 0;  // part of it under compute kernels
  double exposed_us = 0;     // comm_us - overlapped_us
  double idle_us = 0;        // GPU busy with neither, between the first and last op
  double compute_only_us = 0;  // compute with no communication under it, in the same span
  double overlap_pct = 0;
  std::string step_source;   // "nvtx", "inferred" (repeating op pattern) or "none"
  int step_count = 0;
  double mean_step_us = 0;   // from the first step's start to the last's, over step_count - 1
  // One entry per step, or, past kMaxStepPoints steps, per stretch of consecutive steps of
  // equal length: the output of a run of any length stays a few hundred rows per rank.
  std::vector<StepOverlap> steps;
  static constexpr size_t kMaxStepPoints = 500;
  // How CUPTI's kernels were put on the GPU clock, when through NCCL's kernels: how many
  // CUPTI reported, how many matched an op the plugin timed, the fit's residual.
  uint64_t clock_kernels = 0;
  uint64_t clock_matched = 0;
  double clock_residual_us = 0;
  StepTimeline most_exposed_step;  // its step with the most exposed communication (when available)
  // Ops recorded more than OverlapSweep::kReorderOps places from their program order (placed
  // where they came) and GPU intervals that far out of start order (their part before the
  // union's last interval is lost): the figures are approximate where this is not 0.
  uint64_t out_of_order = 0;
};

}  // namespace commtrace::report
