// How much of each rank's communication ran under compute, and how much the GPU sat idle.
// Communication is the union of the rank's collective and point-to-point kernel intervals;
// compute the union of its CUPTI compute kernels; both on the rank's own GPU clock, so no
// clock alignment is involved. Per step as well: steps are the repeating top-level NVTX
// range when the process recorded phases and clock samples (to put CPU-clock phases on the
// GPU clock), else the smallest repeating period of its op sequence.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "tools/report/analyses/gap_busy_time.h"
#include "tools/report/analyses/overlap_rows.h"
#include "tools/report/analyses/overlap_sweep.h"
#include "tools/report/load/progress_line.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Which NVTX range is a step. Unset: PyTorch's profiler step ranges (`ProfilerStep#N`) where
// there are any, else the most frequent name at the shallowest depth where one repeats (digits
// folded: "step 12" and "step 13" are one name). Set (`--step-range`, COMMTRACE_STEP_RANGE):
// ranges whose whole name matches it as an ECMAScript regular expression (a plain name
// matches itself). Without NVTX steps, the op sequence's repeating period.
class StepRule {
 public:
  StepRule() = default;
  // Throws std::regex_error for a bad expression.
  explicit StepRule(const std::string& range) : range_(range), pattern_(range) {}
  const std::string& range() const { return range_; }
  bool set() const { return !range_.empty(); }
  bool matches(std::string_view name) const;

 private:
  std::string range_;
  std::regex pattern_;
};

// What one process's pass is handed, in file order: its ops, and its compute kernels on its
// GPU clock (none where it recorded none, or they cannot be placed on the GPU clock).
struct ProcessItems {
  std::function<void(const RankOp&)> op;
  std::function<void(const GpuInterval&)> kernel;
};
// Calls items.op(op) for every op of one process and items.kernel(k) for each of its compute
// kernels, in file order: from the run held whole (opsFromModel: kernels first), or read back
// from the process's file (opsFromFiles), so that overlap never needs the run's ops or
// kernels held, joined or not. Called from several threads at once, each with its own process.
using ProcessOpSource = std::function<void(size_t process, const ProcessItems& items)>;
ProcessOpSource opsFromModel(const RunModel& run);
ProcessOpSource opsFromFiles(const RunModel& run);

// One row per process. Without compute-kernel records the row is not available (the reason
// says why) but still carries comm_us and the steps' comm_us. The processes are taken on up
// to `threads` threads, each sweeping one process's ops at a time (OverlapSweep: memory that
// does not grow with the run).
// progress, when given, counts the processes done and their files' bytes. busy, when given,
// is shown each process's compute union as it goes by (gap_busy_time.h).
// exposed_by_path, when given, gets per process its ops' own exposed time by NVTX path
// (OverlapSweep::exposedByPath), named as the process's timeline names them (path_names);
// empty for a process whose overlap is not available.
struct PathExposure {
  NameId path = 0;
  uint64_t exposed_ns = 0;
};
std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule, const ProcessOpSource& ops,
                                       unsigned threads = 1, ProgressLine* progress = nullptr, GapBusyTime* busy = nullptr,
                                       std::vector<std::vector<PathExposure>>* exposed_by_path = nullptr);
// From the run held whole.
std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule = {});

// Every process's steps as the overlap table numbers them (from 0), on its own GPU clock;
// none for a process whose ops do not repeat and that recorded no NVTX steps.
std::vector<std::vector<StepWindow>> stepWindows(const RunModel& run, const StepRule& rule = {});

}  // namespace commtrace::report
