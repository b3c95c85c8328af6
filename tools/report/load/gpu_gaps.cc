#include "tools/report/load/gpu_gaps.h"

#include <algorithm>

namespace commtrace::report {

void setGapsInStartOrder(std::vector<GapSpan>& spans, uint64_t latest_end_before, bool any_before) {
  // Ops mostly come in start order: a check spares stable_sort's buffer and merge passes.
  const auto earlier = [](const GapSpan& a, const GapSpan& b) { return a.start < b.start; };
  if (!std::is_sorted(spans.begin(), spans.end(), earlier)) std::stable_sort(spans.begin(), spans.end(), earlier);
  // Ops of one start see the latest end of those that started strictly earlier.
  uint64_t latest_end = latest_end_before;
  bool any_earlier = any_before;
  for (size_t i = 0, same = 0; i < spans.size(); i = same) {
    for (same = i; same < spans.size() && spans[same].start == spans[i].start; ++same) {
      if (spans[same].gap != nullptr && any_earlier)
        *spans[same].gap = spans[same].start > latest_end ? spans[same].start - latest_end : 0;
    }
    for (size_t k = i; k < same; ++k) latest_end = std::max(latest_end, spans[k].end);
    any_earlier = true;
  }
}

void GpuGapTracker::fill(std::span<MemberView* const> chunk_ops) {
  // The chunk's ops join the window in place: a live collector fills a thousand processes'
  // small chunks a second, and copying the window out and back was 2 % of it.
  const size_t before = window_.size();
  for (MemberView* op : chunk_ops) {
    if (op->gpuDuration() != 0) window_.push_back({op->gpu_start_ns, op->gpu_end_ns, &op->gpu_gap_ns});
  }
  if (window_.size() == before) return;
  setGapsInStartOrder(window_, evicted_end_, any_before_);
  if (window_.size() > window_size_) {
    const auto leaving = window_.begin() + static_cast<std::ptrdiff_t>(window_.size() - window_size_);
    for (auto s = window_.begin(); s != leaving; ++s) evicted_end_ = std::max(evicted_end_, s->end);
    any_before_ = true;
    window_.erase(window_.begin(), leaving);
  }
  for (GapSpan& s : window_) s.gap = nullptr;
}

}  // namespace commtrace::report
