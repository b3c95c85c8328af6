#include "tools/report/load/gpu_gaps.h"

#include <algorithm>

namespace commtrace::report {
namespace {

bool earlier(const GapSpan& a, const GapSpan& b) { return a.start < b.start; }

// Walks spans sorted by start: each op of one start sees the latest end of those that started
// strictly earlier (latest_end and any_earlier: of the ops before spans). through_end, when
// given, receives for each span the latest end up to and including it.
void setGapsOfSorted(std::span<GapSpan> spans, uint64_t latest_end, bool any_earlier, uint64_t* through_end) {
  for (size_t i = 0, same = 0; i < spans.size(); i = same) {
    for (same = i; same < spans.size() && spans[same].start == spans[i].start; ++same) {
      if (spans[same].gap != nullptr && any_earlier)
        *spans[same].gap = spans[same].start > latest_end ? spans[same].start - latest_end : 0;
    }
    for (size_t k = i; k < same; ++k) {
      latest_end = std::max(latest_end, spans[k].end);
      if (through_end != nullptr) through_end[k] = latest_end;
    }
    any_earlier = true;
  }
}

}  // namespace

void setGapsInStartOrder(std::vector<GapSpan>& spans, uint64_t latest_end_before, bool any_before) {
  // Ops mostly come in start order: a check spares stable_sort's buffer and merge passes.
  if (!std::is_sorted(spans.begin(), spans.end(), earlier)) std::stable_sort(spans.begin(), spans.end(), earlier);
  setGapsOfSorted(spans, latest_end_before, any_before, nullptr);
}

// Only what a chunk changes is walked: its ops are merged into the window by start (mostly
// they start after all of it, and are appended), and gaps and latest ends are computed from
// the first start group they joined on. A live collector fills a thousand processes' small
// chunks a second; walking the whole window for each was 4 % of it.
void GpuGapTracker::fill(std::span<MemberView* const> chunk_ops) {
  const size_t before = window_.size();
  window_.reserve(before + chunk_ops.size());  // grown once, not doubled step by step
  for (MemberView* op : chunk_ops) {
    if (op->gpuDuration() != 0) window_.push_back({op->gpu_start_ns, op->gpu_end_ns, &op->gpu_gap_ns});
  }
  if (window_.size() == before) return;
  const auto added = window_.begin() + static_cast<std::ptrdiff_t>(before);
  if (!std::is_sorted(added, window_.end(), earlier)) std::stable_sort(added, window_.end(), earlier);
  size_t from = before;
  if (before > 0 && added->start < window_[before - 1].start) {
    from = static_cast<size_t>(std::upper_bound(window_.begin(), added, *added, earlier) - window_.begin());
    std::inplace_merge(window_.begin(), added, window_.end(), earlier);
  }
  while (from > 0 && window_[from - 1].start == window_[from].start) --from;  // its start group, whole
  through_end_.resize(window_.size());
  setGapsOfSorted(std::span(window_).subspan(from), from > 0 ? through_end_[from - 1] : evicted_end_, from > 0 || any_before_,
                  through_end_.data() + from);
  if (from == 0 && any_before_) forgetGapsBeforeTheEvicted();
  for (auto s = window_.begin() + static_cast<std::ptrdiff_t>(from); s != window_.end(); ++s) s->gap = nullptr;
  // The window is cut back to its size when a quarter over it: a cut moves what stays.
  const size_t most_kept = window_size_ + window_size_ / 4;
  if (window_.size() <= most_kept) return;
  const size_t leaving = window_.size() - window_size_;
  evicted_end_ = through_end_[leaving - 1];
  evicted_start_ = window_[leaving - 1].start;
  any_before_ = true;
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(leaving));
  through_end_.erase(through_end_.begin(), through_end_.begin() + static_cast<std::ptrdiff_t>(leaving));
  // A chunk of many ops grew them far past the window: what stays between chunks is held for
  // every file of the run (16,384 of them), so the room is given back.
  if (window_.capacity() > 2 * most_kept) {
    window_.shrink_to_fit();
    through_end_.shrink_to_fit();
  }
}

// An op written so long after those that started later that they left the window: the ops
// that started before it are gone and evicted_end_ counts ops that started after it (it read
// as still running behind them, a gap of 0). Its gap is not known.
void GpuGapTracker::forgetGapsBeforeTheEvicted() {
  for (GapSpan& s : window_) {
    if (s.start > evicted_start_) break;
    if (s.gap != nullptr) *s.gap = MemberView::kNoGap;
  }
}

}  // namespace commtrace::report
