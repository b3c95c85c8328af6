// How much of each rank's communication ran under compute, and how much the GPU sat idle.
// Communication is the union of the rank's collective and point-to-point kernel intervals;
// compute the union of its CUPTI compute kernels; both on the rank's own GPU clock, so no
// clock alignment is involved. Per step as well: steps are the repeating top-level NVTX
// range when the process recorded phases and clock samples (to put CPU-clock phases on the
// GPU clock), else the smallest repeating period of its op sequence.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

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

// One row per process. Without compute-kernel records the row is not available (the reason
// says why) but still carries comm_us and the steps' comm_us.
std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule = {});

// A span of one process's GPU clock, [start_ns, end_ns).
struct StepWindow {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Every process's steps as the overlap table numbers them (from 0), on its own GPU clock;
// none for a process whose ops do not repeat and that recorded no NVTX steps.
std::vector<std::vector<StepWindow>> stepWindows(const RunModel& run, const StepRule& rule = {});

}  // namespace commtrace::report
