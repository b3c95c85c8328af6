#include "tools/report/load/gpu_gaps.h"

#include <algorithm>

namespace commtrace::report {

void GpuGapTracker::fill(std::span<MemberView* const> chunk_ops) {
  std::vector<Span> sorted = window_;  // the window and the chunk; freed with the chunk
  sorted.reserve(window_.size() + chunk_ops.size());
  for (MemberView* op : chunk_ops) {
    if (op->gpuDuration() != 0) sorted.push_back({op->gpu_start_ns, op->gpu_end_ns, op});
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  // Ops of one start see the latest end of those that started strictly earlier.
  uint64_t latest_end = evicted_end_;
  bool any_earlier = any_before_;
  for (size_t i = 0, same = 0; i < sorted.size(); i = same) {
    for (same = i; same < sorted.size() && sorted[same].start == sorted[i].start; ++same) {
      MemberView* op = sorted[same].op;
      if (op != nullptr && any_earlier) op->gpu_gap_ns = op->gpu_start_ns > latest_end ? op->gpu_start_ns - latest_end : 0;
    }
    for (size_t k = i; k < same; ++k) latest_end = std::max(latest_end, sorted[k].end);
    any_earlier = true;
  }
  const size_t keep = std::min(sorted.size(), kWindow);
  for (size_t k = 0; k + keep < sorted.size(); ++k) {
    evicted_end_ = std::max(evicted_end_, sorted[k].end);
    any_before_ = true;
  }
  window_.assign(sorted.end() - static_cast<std::ptrdiff_t>(keep), sorted.end());
  for (Span& s : window_) s.op = nullptr;
}

}  // namespace commtrace::report
