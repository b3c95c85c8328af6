// Where a process's steps begin when no NVTX range marks them: the smallest repeating period
// of its op sequence in program order. Overlap numbers its inferred steps so, and
// `report --from/--to step:N` finds the times where the reference process's steps begin.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace commtrace::report {

// Steps are inferred from the first this many ops in program order (exactly as from the
// whole sequence for runs this short), then follow that period to the end of the run.
inline constexpr size_t kStepPrefixOps = 65'536;
// Ops held to restore program order from file order (ops are written as they complete).
inline constexpr size_t kProgramReorderOps = 16'384;

// One op of a process as overlap and step inference see it, on the process's own clocks.
struct RankOp {
  uint64_t issue_ns = 0;  // CPU start (program order), the GPU start when no CPU time was recorded
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;  // 0: no GPU interval
  uint64_t op_index = 0;    // orders ops issued at the same instant
  uint32_t key = 0;         // equal keys (communicator, func, bytes, side) are "the same op"
  uint8_t side = 0;         // OpSide
  uint32_t path = 0;        // the NVTX path it was issued under (its file's PhasePath id); 0: none or not known
};

// a comes after b in the process's program order: by CPU start, then op index.
bool laterInProgram(const RankOp& a, const RankOp& b);

// Inferred steps: every `period` ops from op `first` in program order; period 0: none.
struct StepPeriod {
  size_t first = 0, period = 0;
  bool beginsStep(uint64_t position) const { return period != 0 && position >= first && (position - first) % period == 0; }
};

// Sorts a process's first ops (at most kStepPrefixOps) into program order and infers from
// them where its steps begin (inferredStepStarts): what overlap and the step finder share.
StepPeriod stepPeriodOf(std::vector<RankOp>& prefix);

// Where steps begin in an op sequence (indices), from its smallest repeating period: the
// whole sequence repeating (the last step may be cut short), else its longest repeating
// tail of at least half the sequence (warm-up ops before it belong to no step). At least two
// repetitions; nothing when the sequence does not repeat.
std::vector<size_t> inferredStepStarts(const std::vector<uint32_t>& keys);

// A process's steps, read from its file in bounded memory: its NVTX step ranges where it has
// them (phase_keeper.h: stepRanges, as the overlap table numbers its steps), a step beginning
// where its range does; else as its op sequence repeats: how many, their period in ops, and
// the CPU clock time each asked-for step begins at: halfway between the CPU
// starts of the last op before it and of its first op, so that an op other ranks issue a
// little before this one still falls in its step (steps begin after a gap without
// communication: the forward pass, the optimizer). 0 for a step that begins with the first
// op (the start of the run) or that the run does not reach.
struct StepStarts {
  uint64_t steps = 0;   // 0: no NVTX step range, and the op sequence does not repeat
  size_t period = 0;    // ops per step; 0 for NVTX steps
  std::string step_range;  // NVTX steps: the first one's name ("ProfilerStep#551"); "" for inferred ones
  bool cpu_times = true;  // false: some op has no CPU time (files of NCCL 2.27): no start is known
  std::vector<uint64_t> begin_cpu_ns;  // one per asked-for step
};

// step_range: the step range's rule (--step-range; empty: the default). false, with the
// reader's "commtrace: ..." message, when the file cannot be read at all.
bool findStepStarts(const std::string& path, const std::vector<uint64_t>& steps, const std::function<bool(std::string_view)>& step_range,
                    StepStarts& out, std::string& error);

}  // namespace commtrace::report
