// A report of part of a run (`report --from/--to`): the ops whose earliest member started,
// on its host's CPU clock read as CLOCK_REALTIME, in [from, to). The window is filtered
// where ops are joined, so that every analysis fed from the joined stream (bandwidth,
// stragglers, matrix, mismatches, clocks, heatmap) and overlap (each process's ops read
// back from its file) see the same ops.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <span>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// One end of a window as the user gave it.
struct TimePoint {
  enum class Kind {
    kUnset,
    kSinceStart,  // ns after the run's first process started recording (its header's start)
    kUtc,         // CLOCK_REALTIME ns
    kTimeOfDay,   // ns since midnight UTC, on the day that puts it nearest the run's start
    kStep,        // ns holds a step number: where the reference process's inferred step begins
  };
  Kind kind = Kind::kUnset;
  int64_t ns = 0;
};

struct TimeWindowSpec {
  TimePoint from, to;
  bool set() const { return from.kind != TimePoint::Kind::kUnset || to.kind != TimePoint::Kind::kUnset; }
};

// CLOCK_REALTIME of a point, given when the run's first process started recording (a step
// is resolved by the loader, from the reference process's file: 0 here).
uint64_t resolveTimePoint(const TimePoint& point, uint64_t run_start_utc_ns);
// The window in CLOCK_REALTIME ns: [from, to) (0 and UINT64_MAX where not given).
TimeWindow resolveWindow(const TimeWindowSpec& spec, uint64_t run_start_utc_ns);

// Whether the op whose members these are started in run.window: when its earliest member
// entered the NCCL call. One without a CPU time is in no window, but in a shard's (sharded)
// in the last shard's, so that every op is in exactly one shard.
bool startedInWindow(const RunModel& run, std::span<const MemberView> members);

// Hands on the ops that started inside run.window and counts the others in
// run.ops_outside_window (those without a CPU time among them: they cannot be placed). A
// process's first op inside it has no earlier op the analyses see: its GPU gap, measured
// from an op before the window, is handed on as none (MemberView::kNoGap). A shard's window
// (TimeWindow::sharded) counts nothing outside it and clears instead the gaps measured from
// an op it left out (the root-cause walk would wait for that op, which is another shard's:
// at a cut a process's ops fall on both sides), and hands on every piece of an AlltoAll, Gather or Scatter call whatever its time: a
// call's pieces start apart, so the pieces go with their call, whose shard only the calls
// grouped tell (StreamedAnalyses groups them and keeps those of its shard's calls).
class TimeWindowFilter : public JoinedOpSink {
 public:
  TimeWindowFilter(RunModel& run, JoinedOpSink& next) : run_(run), next_(next) {}

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  void runWidth(size_t processes) override { next_.runWidth(processes); }
  void finish() override { next_.finish(); }

 private:
  // Ops of a process left out that an op handed on later may have its gap from: a process's
  // ops near a cut fall on both sides, close together.
  static constexpr size_t kLeftOutKept = 16;
  struct Process {
    bool handed_on = false;  // an op of it was handed on
    std::array<std::pair<uint64_t, uint64_t>, kLeftOutKept> left_out{};  // a shard's: (GPU start, end), the latest
    size_t next_left_out = 0;
    uint64_t left_out_before_end = 0;  // the latest GPU end of its ops left out as before the window
  };
  Process& of(int32_t process);
  bool inside(std::span<const MemberView> members);
  void leftOut(std::span<const MemberView> members);
  void gapCleared(MemberView& m);

  RunModel& run_;
  JoinedOpSink& next_;
  std::vector<Process> processes_;
  std::vector<MemberView> members_;  // scratch
};

}  // namespace commtrace::report
