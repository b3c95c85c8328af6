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
