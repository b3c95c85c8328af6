#include "tools/report/load/gpu_gaps.h"

#include <algorithm>

namespace commtrace::report {

void GpuGapTracker::fill(std::span<MemberView* const> chunk_ops) {
  sorted_ = window_;
  for (MemberView* op : chunk_ops) {
    if (op->gpuDuration() != 0) sorted_.push_back({op->gpu_start_ns, op->gpu_end_ns, op});
  }
  std::stable_sort(sorted_.begin(), sorted_.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  // Ops of one start see the latest end of those that started strictly earlier.
  uint64_t latest_end = evicted_end_;
  bool any_earlier = any_before_;
  for (size_t i = 0, same = 0; i < sorted_.size(); i = same) {
    for (same = i; same < sorted_.size() && sorted_[same].start == sorted_[i].start; ++same) {
      MemberView* op = sorted_[same].op;
      if (op != nullptr && any_earlier) op->gpu_gap_ns = op->gpu_start_ns > latest_end ? op->gpu_start_ns - latest_end : 0;
    }
    for (size_t k = i; k < same; ++k) latest_end = std::max(latest_end, sorted_[k].end);
    any_earlier = true;
  }
  const size_t keep = std::min(sorted_.size(), kWindow);
  for (size_t k = 0; k + keep < sorted_.size(); ++k) {
    evicted_end_ = std::max(evicted_end_, sorted_[k].end);
    any_before_ = true;
  }
  window_.assign(sorted_.end() - static_cast<std::ptrdiff_t>(keep), sorted_.end());
  for (Span& s : window_) s.op = nullptr;
}

}  // namespace commtrace::report
