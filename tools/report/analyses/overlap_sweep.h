// One process's overlap of communication with compute, swept over its ops as they are read
// from its file, in memory that does not grow with the run: what is held is a window of
// ops waiting for their place in program order, the communication kernels not yet merged
// into the union, and the steps not yet summed (a lag of some thousands of ops), plus the
// first kPrefixOps ops while the step pattern is inferred from them.
//
// Program order is the order the rank issued its ops (CPU start, then op index, side and
// key): it repeats from step to step. Ops come from the file in roughly that order (records
// are written as ops complete, thread by thread); kReorderOps of them are held to put them
// back in it. GPU intervals are merged into the union in start order the same way. The
// compute kernels come from the same file (IntervalUnion): an interval's overlap, and a step,
// is summed once both unions are final past its end; CUPTI delivers kernels late, so up to
// a few flush periods of communication intervals and windows wait for them.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <unordered_map>
#include <string>
#include <vector>

#include "tools/report/analyses/interval_union.h"
#include "tools/report/analyses/overlap_rows.h"
#include "tools/report/load/path_span.h"
#include "tools/report/load/reorder_buffer.h"
#include "tools/report/load/run_model.h"
#include "tools/report/load/step_pattern.h"

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
  // The prefix also ends once this many compute intervals wait for it (the steps it infers
  // need them): a data-parallel job runs thousands of kernels per step of a few dozen ops,
  // and some thousands of its steps are plenty to find the period in.
  static constexpr size_t kPrefixComputeIntervals = 262'144;

  // nvtx_steps: its steps from NVTX ranges, sorted; empty: steps are inferred from its ops.
  // available: whether compute was recorded and placed on the GPU clock (else only
  // communication time is summed, and kernels are ignored).
  // on_compute: sees each interval of the compute union as it is final (IntervalUnion).
  // by_path: measure each op's exposed time by its NVTX path (exposedByPath).
  OverlapSweep(std::vector<StepWindow> nvtx_steps, bool available, IntervalUnion::Observer on_compute = {}, bool by_path = false);

  void add(const RankOp& op);               // in file order
  void addKernel(const GpuInterval& kernel);  // a compute kernel on the GPU clock, in file order
  const IntervalUnion& compute() const { return compute_; }
  // The row's figures (comm_us ... steps, step_source, most_exposed_step); false when the
  // process had no timed communication kernel (the row is then left as it was). `windows`,
  // when given, receives every step's window.
  bool finish(OverlapRow& row, std::vector<StepWindow>* windows = nullptr);
  // The exposed time of each NVTX path's ops (RankOp::path): the part of their GPU intervals
  // under no compute kernel, time two ops of one path share counted once (the pieces of an
  // AlltoAll share their kernel's: PathSpan); ops of different paths running at once each
  // count theirs. Complete after finish(); empty where overlap is not available or not asked for.
  std::unordered_map<uint32_t, uint64_t> exposedByPath() const;

 private:
  struct OpenStep {  // an inferred step whose ops are still being released
    uint64_t start_ns = UINT64_MAX;
    uint64_t max_end_ns = 0;
  };

  void endPrefix();
  void release(const RankOp& op);   // the next op in program order
  void stepBoundary(bool at_end);   // an inferred step's ops are all released
  void advance();                   // after more of the compute union is final
  uint64_t computeNeededFrom() const;  // the compute union before this is needed no more
  uint64_t uncountedFrom() const;   // the start of comm_'s first closed interval not counted yet
  void countOverlaps();             // of closed union intervals whose compute is final
  void countCompute();              // compute intervals newly closed, from the first communication on
  void attributeExposure();         // of released ops whose compute is final
  void sumSteps(bool at_end);       // the windows whose part of the union is final
  void sumStep(const StepWindow& w);
  void keepStretch(const StepOverlap& step);

  IntervalUnion compute_;
  std::vector<GpuInterval> compute_scratch_;  // compute reaching into the window at hand
  const bool available_;
  const bool by_path_;  // available and asked for
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

  IntervalUnion comm_;              // of the communication kernels, held while windows may need it
  std::vector<GpuInterval> comm_scratch_;  // communication reaching into the window at hand
  uint64_t comm_counted_ = 0;       // comm_'s closed intervals counted into comm_ns_ and overlapped_ns_
  uint64_t compute_counted_ = 0;    // compute union intervals counted into compute_ns_
  uint64_t compute_ns_ = 0;         // compute from the first communication kernel's start on
  uint64_t comm_ns_ = 0, overlapped_ns_ = 0;

  std::deque<RankOp> exposure_pending_;  // released ops (with GPU times) whose compute is not final yet
  std::multiset<uint64_t> pending_starts_;  // their GPU starts: the compute they still need
  struct PathExposed {
    uint64_t exposed_ns = 0;
    PathSpan span;  // what of the path's ops' time is counted
  };
  std::unordered_map<uint32_t, PathExposed> exposed_by_path_;

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
