// A process's NVTX ranges as its file is read: all of them (the export draws them), or only
// those that can be its steps as overlap picks them (analyses/overlap.h, StepRule): those the
// step range names, PyTorch profiler steps, and those at the shallowest depth where a name
// has repeated so far, or shallower (the default step is the most frequent name there). What
// is held then grows with the run's steps, not with every layer's range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Step names usually carry the step number ("step 12", "iter_12"): digits are folded so that
// the occurrences of one range repeat under one key.
std::string foldDigits(std::string_view name);
// "ProfilerStep#12": a step of PyTorch's profiler.
bool isProfilerStep(std::string_view name);

// The ranges that are a process's steps, in start order, by the rule overlap follows
// (analyses/overlap.h, StepRule): those step_range names when it is given; else PyTorch
// profiler steps where there are any; else the most frequent name (digits folded) at the
// shallowest depth where one repeats. Empty when none is.
std::vector<PhaseSpan> stepRanges(const std::vector<PhaseSpan>& phases, const NamePool& names,
                                  const std::function<bool(std::string_view)>& step_range);

class PhaseKeeper {
 public:
  // step_range: whether a name is the step range (--step-range); empty for the default rule.
  PhaseKeeper(bool keep_all, std::function<bool(std::string_view)> step_range)
      : keep_all_(keep_all), step_range_(std::move(step_range)) {}

  // domain: the range's NVTX domain; NCCL's own ranges (its API calls) are never steps.
  void add(const PhaseSpan& span, std::string_view name, std::string_view domain);
  // What was kept, sorted by start.
  std::vector<PhaseSpan> take();

 private:
  struct Kept {
    PhaseSpan span;
    bool named;  // by the step range or as a profiler step: kept at any depth
  };
  const bool keep_all_;
  const std::function<bool(std::string_view)> step_range_;
  std::map<std::pair<uint16_t, std::string>, uint64_t> seen_;  // (depth, folded name): as many as distinct names
  uint16_t repeat_depth_ = UINT16_MAX;  // the shallowest depth where a name has repeated
  std::vector<Kept> kept_;
};

}  // namespace commtrace::report
