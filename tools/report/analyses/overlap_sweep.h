// One process's overlap of communication with compute, swept over its ops as they are read
// from its file, in memory that does not grow with the run: what is held is a window of
// ops waiting for their place in program order, the communication kernels not yet merged
// into the union, and the steps not yet summed (a lag of some thousands of ops), plus the
// first kPrefixOps ops while the step pattern is inferred from them.
//
// Program order is the order the rank issued its ops (CPU start, then op index, side and
// key): it repeats from step to step. Ops come from the file in roughly that order (records
// are written as ops complete, thread by thread); kReorderOps of them are held to put them
// back in it. GPU intervals are merged into the union in start order the same way.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "tools/report/load/reorder_buffer.h"
#include "tools/report/load/step_pattern.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// A span of one process's GPU clock, [start_ns, end_ns).
struct StepWindow {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class OverlapSweep {
 public:
  // Steps are inferred from the first this many ops in program order (step_pattern.h).
  static constexpr size_t kPrefixOps = kStepPrefixOps;
  // Ops (and GPU intervals) held to restore program (and start) order.
  static constexpr size_t kReorderOps = kProgramReorderOps;

  // compute: the process's compute kernels as a sorted, disjoint union on its GPU clock.
  // nvtx_steps: its steps from NVTX ranges, sorted; empty: steps are inferred from its ops.
  // available: whether compute was recorded (else only communication time is summed).
  OverlapSweep(const std::vector<GpuInterval>& compute, std::vector<StepWindow> nvtx_steps, bool available);

  void add(const RankOp& op);  // in file order
  // The row's figures (comm_us ... steps, step_source, most_exposed_step); false when the
  // process had no timed communication kernel (the row is then left as it was). `windows`,
  // when given, receives every step's window.
  bool finish(OverlapRow& row, std::vector<StepWindow>* windows = nullptr);

 private:
  struct OpenStep {  // an inferred step whose ops are still being released
    uint64_t start_ns = UINT64_MAX;
    uint64_t max_end_ns = 0;
  };

  void endPrefix();
  void release(const RankOp& op);   // the next op in program order
  void stepBoundary(bool at_end);   // an inferred step's ops are all released
  void addInterval(GpuInterval interval);  // the next GPU interval in start order
  void closeUnionInterval();
  void sumSteps(bool at_end);       // the windows whose part of the union is final
  void sumStep(const StepWindow& w);
  void keepStretch(const StepOverlap& step);

  const std::vector<GpuInterval>& compute_;
  const bool available_;
  const bool nvtx_;
  std::string source_;

  std::vector<RankOp> prefix_;
  bool prefix_done_ = false;
  ReorderBuffer<RankOp, bool (*)(const RankOp&, const RankOp&)> program_order_;
  uint64_t released_ = 0;           // ops released in program order so far
  RankOp last_released_{};
  uint64_t out_of_order_ = 0;       // OverlapRow::out_of_order

  StepPeriod steps_period_;         // inferred steps
  OpenStep open_step_;
  bool have_pending_step_ = false;
  OpenStep pending_step_;           // kept, its end waits for the next kept step's start

  ReorderBuffer<GpuInterval, bool (*)(const GpuInterval&, const GpuInterval&)> start_order_;
  bool have_open_ = false;
  GpuInterval open_{};              // the union's last interval, still growing
  std::deque<GpuInterval> unioned_; // closed union intervals the waiting windows may need
  uint64_t first_comm_ns_ = 0, last_comm_ns_ = 0;
  uint64_t last_start_ns_ = 0;      // of the latest interval merged
  uint64_t comm_ns_ = 0, overlapped_ns_ = 0;

  std::deque<StepWindow> windows_;  // waiting to be summed, in order
  std::vector<StepWindow>* all_windows_ = nullptr;
  std::vector<StepOverlap> stretches_;  // at most kMaxStepPoints, each of stretch_ steps
  size_t stretch_ = 1;
  int steps_ = 0;
  double first_step_us_ = 0, last_step_us_ = 0;
  double most_exposed_us_ = -1;
  StepTimeline most_exposed_;
};

}  // namespace commtrace::report
